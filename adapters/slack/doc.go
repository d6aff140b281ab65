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
// Either way Slack is acknowledged before any slow work: events and button
// presses at once, slash commands as soon as their answer is ready, which
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
// Send never retries: a rate limit (HTTP 429) is returned as a
// *plugin.RateLimitedError carrying Slack's Retry-After, and the outbox
// retries then. Replies to a person, which have no outbox, wait out a rate
// limit a few times before giving up. slack-go's own retries stay off.
package slack
