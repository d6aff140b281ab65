// Package discord connects Taskloom to Discord through
// github.com/bwmarrin/discordgo: the gateway for incoming messages and
// interactions, the REST API for everything the bot says.
//
// New builds an Adapter; its Plugin (named "discord", depending on
// "orchestrator") registers it as the platform that delivers rooms
// "discord:<channel id>" and as the service that holds the gateway
// connection. A thread's room is "discord:<channel id>:<thread id>" (the
// thread is a channel of its own in Discord; its parent comes from the
// gateway's state, or once from the REST API); the workspace is the
// guild, and a DM has none (Message.DM), which keeps DM tasks private to
// their requestor.
//
// Incoming:
//
//   - A message that mentions the bot, replies to one of the bot's
//     messages, or is sent in a DM goes through Runtime.HandleMessage with
//     the Discord message ID as Message.ID, so a message the gateway
//     delivers twice (a replay after a reconnect) is acted on once. Other
//     chatter is ignored. The bot asks for the GUILDS, GUILD_MESSAGES and
//     DIRECT_MESSAGES intents only; without the privileged MESSAGE_CONTENT
//     intent Discord still shows it the text of DMs and of messages that
//     mention it, which is all it reads. GUILDS keeps the guilds' roles and
//     owners current, for the Manage Server check.
//   - The /task command (create, list, status, pause, resume, cancel,
//     search, answer, retry) is registered as a global command at start-up
//     with one bulk overwrite, skipped when the registered commands are
//     already the same, so restarts and replicas do not churn them. It is
//     user-installable: its integration types are guild and user install,
//     its contexts servers, DMs with the bot and other DMs and group DMs.
//     An invocation becomes a Command message whose text is the chat
//     command it stands for ("status #3"); /task create, whose strategy
//     option the text cannot say, also names create_task and its
//     parameters (Message.Action). The reply is the interaction's response
//     when it is ready within DeferAfter (2 s), else the interaction is
//     deferred and the reply edits the deferred response. Refusals are
//     ephemeral. Where the bot is not (a group DM, a server the app is
//     installed in only by the user), the interaction is answered there
//     but its tasks report in the user's DM with the bot, private to them.
//   - The number option autocompletes (autocomplete.go): the caller's
//     visible tasks that the subcommand can act on, newest first, at most
//     25, filtered by the digits typed, each "#N name — status".
//   - With Options.Threads (TASKLOOM_DISCORD_THREADS) a task created in a
//     guild text channel gets a thread, "#N <name>", started from the
//     acknowledgement, and moves there (Store.MoveTask): its notifications
//     follow, and in that thread a message that mentions the bot answers
//     the waiting task, as a reply to its question does (threads.go).
//   - Pause / Resume / Cancel buttons (custom IDs "taskloom:pause:12")
//     are put on messages about tasks. A press is a Command message
//     "pause #12" from the presser, so the commands' authorisation
//     applies; it is answered with an ephemeral reply to the presser,
//     and the task message itself is left as it is.
//
// Outgoing: every message is sent with allowed_mentions {"parse": []}, so
// it pings no one whatever its text says, and is split to 2,000 characters
// with render.Split; the caller has already rendered it in the Discord
// flavor. discordgo's own rate-limit retry is off: a 429 — or a bucket
// discordgo knows to be exhausted — is returned at once as a
// *plugin.RateLimitedError, and the notification outbox retries later.
package discord
