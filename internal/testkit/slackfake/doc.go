// Package slackfake is a fake Slack for tests: one httptest server with the
// Web API (under /api/, the base github.com/slack-go/slack's OptionAPIURL
// takes), Socket Mode's websocket, and response URLs, which slack-go talks
// to unchanged. It also plays Slack's side of the HTTP Events API: it
// builds the signed requests Slack sends to an app's request URLs.
//
// A test starts one with New and points the code under test at APIURL.
//
// The Web API answers what a Taskloom-sized bot calls — auth.test,
// users.info, conversations.info, chat.postMessage, chat.postEphemeral,
// chat.update, conversations.history, conversations.replies and
// apps.connections.open — with Slack's response shapes and
// error codes: tokens are checked by type (a bot token for the Web API, an
// app-level token for apps.connections.open), messages are kept (Messages,
// WaitMessages) with the special mentions they would ping (Message.Pings),
// and blocks are held to Block Kit's limits (50 blocks, 3000 characters of
// section text, unique block and action IDs, 25 elements per actions block,
// button text and value lengths) and answered invalid_blocks when they break
// them; a text over 40,000 characters is msg_too_long. Posts keep their
// metadata (event_type and event_payload; invalid_metadata_format and
// invalid_metadata_schema as on Slack), and the history and replies of a
// channel (the app's own posts, which is all the fake keeps) return it
// with include_all_metadata, paged with limit and cursor and bounded by
// oldest and latest. Every call is
// recorded (Calls, CallsTo, WaitCalls). RateLimitNext answers 429 with
// Retry-After and {"ok":false,"error":"ratelimited"}, as Slack does;
// FailNext answers another error.
//
// Socket Mode: apps.connections.open hands out a one-use websocket URL; the
// fake greets each connection with hello, pings it, delivers envelopes
// (Deliver: events_api, slash_commands, interactive), redelivers them as
// Slack does when an ack is late (Redeliver: a new envelope ID, retry_attempt
// and retry_reason), records the acks (Acks, WaitAck) and can ask the client
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
// Nothing in the fake sleeps; tests wait with WaitMessages, WaitCalls,
// WaitAck and WaitConnections, bounded by their context.
package slackfake
