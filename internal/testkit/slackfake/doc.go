// Package slackfake is a fake Slack for tests: one httptest server with the
// Web API (under /api/, the base github.com/slack-go/slack's OptionAPIURL
// takes), Socket Mode's websocket, and response URLs, which slack-go talks
// to unchanged. It also plays Slack's side of the HTTP Events API: it
// builds the signed requests Slack sends to an app's request URLs.
//
// A test starts one with New and points the code under test at APIURL.
//
// The Web API answers what a Taskloom-sized bot calls — auth.test,
// users.info, conversations.info, conversations.open, chat.postMessage,
// chat.postEphemeral, chat.update, chat.delete, conversations.history,
// conversations.replies, views.open, views.publish,
// assistant.threads.setSuggestedPrompts, assistant.threads.setStatus and
// apps.connections.open — with Slack's response shapes and
// error codes: tokens are checked by type (a bot token for the Web API, an
// app-level token for apps.connections.open), messages are kept (Messages,
// WaitMessages) with the special mentions they would ping (Message.Pings),
// and blocks are held to Block Kit's limits (50 blocks, 3000 characters of
// section text, unique block and action IDs, 25 elements per actions block,
// button text and value lengths) and answered invalid_blocks when they break
// them; a text over 40,000 characters is msg_too_long. Markdown blocks
// (standard Markdown, 12,000 characters in all per message) are kept with
// the rest (Message.MarkdownTexts). chat.delete takes a post out of the
// channel and its history (Message.Deleted). Posts keep their
// metadata (event_type and event_payload; invalid_metadata_format and
// invalid_metadata_schema as on Slack), and the history and replies of a
// channel (the app's own posts, which is all the fake keeps) return it
// with include_all_metadata, paged with limit and cursor and bounded by
// oldest and latest. Every call is
// recorded (Calls, CallsTo, WaitCalls). RateLimitNext answers 429 with
// Retry-After and {"ok":false,"error":"ratelimited"}, as Slack does;
// FailNext answers another error, and ServerErrorNext an HTTP 500 for a
// while, as Slack does when it fails on its side (ServerErrorAfterNext
// after carrying the call out); StallNext hangs calls until the client
// gives up, then answers 504, carried out or not.
//
// Views: every slash command, button press and view submission comes with
// a trigger ID that views.open exchanges once, within three seconds
// (invalid_trigger_id, exchanged_trigger_id, expired_trigger_id), for a
// modal that opens for the person who acted (OpenModals). A view is held to
// Slack's rules (at most 100 blocks; a modal's title of 1–24 characters and
// its submit button when it has inputs; private_metadata at most 3000
// characters; input blocks with a label and an element such as a
// plain_text_input of at most 3000 characters, a static_select or a
// number_input) and is invalid_arguments otherwise. views.publish keeps one
// Home tab per person (HomeView) with a stable view ID and a fresh hash,
// hash_conflict for a stale hash and not_enabled without a Home tab
// (WithoutHomeTab). SubmitView builds the view_submission a person's client
// would send — refusing what the client refuses: a required input left
// empty, text over max_length, a number out of bounds — and
// ViewSubmissionResult reads the app's answer (nothing or clear closes the
// modal; errors must name input blocks). HomeButtonPress is a press in the
// Home tab: a block_actions payload with the view and no channel.
//
// Events besides messages: AppHomeOpened (app_home_opened, with the Home
// tab's view once one is published) and AssistantThreadStarted
// (assistant_thread_started, which starts an assistant thread in the user's
// direct-message channel; their messages there are DirectMessage(...).
// InThread(ts)). Suggested prompts (one to four) are kept per assistant
// thread (SuggestedPrompts); a status (AssistantStatus) lasts until it is
// cleared, the app posts in the thread, or StatusTimeout passes, as on
// Slack.
//
// Socket Mode: apps.connections.open hands out a one-use websocket URL; the
// fake greets each connection with hello, pings it, delivers envelopes
// (Deliver: events_api, slash_commands, interactive; slash commands and
// view submissions accept a response payload), redelivers them as
// Slack does when an ack is late (Redeliver: a new envelope ID, retry_attempt
// and retry_reason; RedeliverUnacked redelivers what was not acknowledged
// within AckTimeout, up to MaxRetries times with Slack's backoff), records the
// acks (Acks, WaitAck) and can ask the client
// to reconnect (Disconnect).
//
// The HTTP side: Event, Command and Interaction are the payloads Slack
// sends (AppMention, DirectMessage, SlashCommand and ButtonPress build them
// with fresh IDs and timestamps); Request turns one into the signed request
// (X-Slack-Signature, X-Slack-Request-Timestamp; Retry adds X-Slack-Retry-Num
// and X-Slack-Retry-Reason) for the app's handler. Slash commands and
// interactions get response URLs on this server; what is posted to them is
// kept with the messages.
//
// Nothing in the fake sleeps but a call StallNext holds (on the wall
// clock, as long as it was told or until its client gives up); tests wait with WaitMessages, WaitCalls,
// WaitAck and WaitConnections, bounded by their context.
package slackfake
