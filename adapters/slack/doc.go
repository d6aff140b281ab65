// Package slack connects Taskloom to Slack with github.com/slack-go/slack:
// app mentions, direct messages, the /task slash command and the
// Pause / Resume / Cancel buttons come in; replies and notifications go out
// as Block Kit messages.
//
// The Adapter is a plugin.Platform (rooms "slack:<channel>" and
// "slack:<channel>:<thread ts>") and a plugin.Service. Plugin returns the
// "slack" plugin that registers both; it depends on "orchestrator".
//
// Two ways in, one pipeline:
//
//   - Socket Mode, when an app-level token (xapp-) is set: the service opens
//     the websocket (apps.connections.open) and reads envelopes from it;
//   - the HTTP Events API otherwise: HTTPHandler serves POST /slack/events,
//     /slack/commands and /slack/interactions on the service's listener,
//     and refuses with 401 any request whose signature (X-Slack-Signature,
//     HMAC-SHA256 of "v0:<timestamp>:<body>" with the signing secret) is wrong
//     or whose timestamp is more than five minutes from the clock.
//
// Either way Slack is acknowledged before any slow work: an event once its
// message is stored (within EventStoreWait; one the store does not take by
// then is left unacknowledged, for Slack to deliver again, but for Slack's
// last retry), button presses at once, slash commands as soon as their
// answer is ready, which
// then rides in the acknowledgement — or after AckWindow with nothing, the
// answer following through the command's response URL. Every message has a
// stable ID (channel and ts for events, the trigger ID for commands and
// button presses), and the runtime acts on an ID once, so Slack's retries
// (X-Slack-Retry-Num) and Socket Mode redeliveries do nothing twice.
//
// Rooms: an app mention in a channel is answered in its thread, and a task
// it creates is reported there: its room is "slack:<channel>:<thread ts>",
// the thread's ts being the mention's own when it was not in a thread yet.
// In a task's thread a mention of the bot is a reply to it, and a reply
// without a mention (message.channels, message.groups) reaches the
// pipeline unaddressed, so answering a task's question there just works;
// channel messages anywhere else are dropped unread.
// A direct message's room is "slack:<D channel>" (with the thread when it
// was in one); a slash command's is "slack:<channel>", since a command
// cannot start a thread. The workspace is the team ID; direct messages are
// plugin.Message.DM, so their tasks stay private to their author. Whether
// the author is a workspace admin or owner (users.info) is cached for
// AdminTTL and becomes Message.Admin.
//
// Text arrives in Slack's markup and is turned into what the person typed
// (&amp; &lt; &gt; decoded, links to their address, <!channel> to
// "@channel"); text goes out as the caller rendered it (render.Slack), in a
// section block per SlackBlockLimit characters with the same text as the
// message's fallback text, split into messages of SlackTextLimit, and with
// a row of buttons (action IDs taskloom_pause, taskloom_resume,
// taskloom_cancel; the value is the task number) for each task the message
// is about. A button press becomes the command "pause #N" from the person
// who pressed it, so the runtime's authorization applies; a refusal is
// shown to that person only (chat.postEphemeral).
//
// Beyond the chat itself (docs/discord.md, docs/slack.md):
//
//   - The App Home tab: app_home_opened (tab "home") publishes the person's
//     tasks (views.publish) — those they asked for that they may see from
//     Slack, in the workspace or their direct messages, active first, newest
//     first, HomeTasks of them — each with its bar (render.Bar) and the
//     buttons its status allows, with the same action IDs as in messages.
//     The adapter follows the runtime's TASK_CREATED, TASK_CHANGED and
//     TASK_ENDED events: a change to a task of someone who opened the tab
//     (MaxHomeUsers are remembered) refreshes it at the end of HomeDebounce,
//     once for however many changes. A press in the tab is answered in the
//     person's direct messages with the app. Changes made by another replica
//     reach the tab when this replica hears of one of its own or the person
//     opens it again.
//   - `/task create` with nothing after it opens a modal (views.open with
//     the command's trigger): goal, strategy, max iterations (the last two
//     only when the create_task action takes them). Its view_submission runs
//     create_task — as `create task` does, with its limits — for the person
//     who submitted, in the command's channel (carried in private_metadata).
//     Input that is not valid, and a refusal of the action within AckWindow,
//     are answered with response_action "errors" on the field; nothing is
//     created. A submission is acted on once, however often it is delivered.
//   - Assistant threads (AI apps): assistant_thread_started gets
//     SuggestedPrompts; a message there is a direct message; while a task
//     created there is queued or running, assistant.threads.setStatus shows
//     "is working on #N…", set again after each post there (which ends a
//     status on Slack) and at least every StatusRefresh while it changes,
//     and cleared when it stops working.
//   - A completion whose summary is longer than MarkdownSummaryAfter
//     carries the summary in a markdown block, as the model wrote it (with
//     mentions defused), the rest in sections; the text field keeps it all.
//
// Send never retries: a rate limit (HTTP 429) is returned as a
// *plugin.RateLimitedError carrying Slack's Retry-After, and the outbox
// retries then. Replies to a person, which have no outbox, wait out a rate
// limit a few times before giving up. slack-go's own retries stay off.
package slack
