// Package discordfake is a fake Discord for tests: one httptest server
// with the REST API (v9, under /api/v9/) and the gateway websocket, which
// github.com/bwmarrin/discordgo talks to unchanged.
//
// A test starts one with New and points the code under test at it: the
// service through DISCORD_API_URL = URL() (the site root, as
// "https://discord.com/" is Discord's), a bare discordgo.Session through
// Point (per session, parallel-safe) or SetEndpoints (discordgo's
// package-level Endpoint variables; not parallel-safe).
//
// The gateway speaks Discord's protocol: HELLO, IDENTIFY → READY and one
// GUILD_CREATE per guild, heartbeats and their ACKs, RESUME → the missed
// dispatches and RESUMED, INVALID_SESSION, RECONNECT, and close codes.
// Dispatches carry per-session sequence numbers and are kept for RESUME.
// Payloads are zlib-compressed when IDENTIFY asks for compression, as
// discordgo does by default. The builders (MessageCreate, SlashCommand,
// ButtonClick) make the payloads Discord sends and apply its rules: intents
// (GUILD_MESSAGES, DIRECT_MESSAGES, MESSAGE_CONTENT, privileged intents
// refused with 4014), shards, permissions. Disconnect, DropWithoutClose,
// Reconnect and InvalidateSession drive the reconnect paths.
//
// REST calls are recorded (Calls, CallsTo, WaitCalls) and answered as
// Discord answers them, error codes included: messages (kept, see
// Messages, with whom they ping under allowed_mentions and Discord's
// limits on content, embeds and buttons; edited and deleted), application
// commands (bulk overwrite keeps IDs; integration_types, contexts and
// autocomplete kept and checked), interaction callbacks within the
// three-second window (Responses), follow-ups and @original edits through
// the interaction webhook, channels, guilds, members. Start Thread from
// Message makes a public thread with the message's ID (Threads), announced
// with THREAD_CREATE and listed in GUILD_CREATE (AddThread makes one a
// person started; AddPrivateThread a private thread, type 12, with the bot
// among its members); its messages are a channel of their own whose
// parent_id is the channel; a DM, a thread, a
// message with a thread already or a missing Create Public Threads
// (DenyPermissions) is refused with Discord's codes. Autocomplete
// dispatches type 4 interactions, answered by type 8 with at most 25
// choices; SlashCommand and Autocomplete in a DM carry user, not member
// (context BOT_DM), and in a group DM (AddGroupDM, a channel the bot is
// not in and cannot post to) context PRIVATE_CHANNEL, offered only for
// commands installable to users. The bot's own messages
// come back over the gateway as on Discord. A message created with a
// nonce and enforce_nonce, when the bot created one with the same nonce in
// the past few minutes (DefaultNonceWindow, measured on WithNow's clock),
// gets that message back and no new one, as Discord's Create Message
// documents. RemoveChannel and DenyChannel make a channel answer 404
// Unknown Channel and 403 Missing Access (AllowChannel undoes the latter). RateLimitNext answers 429 with
// Discord's body and headers; FailNext answers other errors, and FailAfterNext answers one after
// carrying the call out, as a 5xx from between client and API does;
// StallNext hangs calls until the client gives up, then answers 504,
// carried out or not.
//
// Nothing in the fake sleeps but a call StallNext holds (on the wall
// clock, as long as it was told or until its client gives up); a test waits with WaitIdentified,
// WaitResumed, WaitMessages, WaitCalls and WaitResponses, bounded by its
// context.
package discordfake
