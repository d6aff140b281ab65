// Package render turns tasks into the chat text every platform shows: the
// batched progress message, the completion, stall, failure and cancellation
// notices, the queue view, a task's detailed status and the help text
// (docs/chat.md). The console, Discord and Slack all call it, so a message
// looks the same everywhere except where a platform's markup needs it not to.
//
// A Flavor names that markup. Plain is for the console and logs; Discord and
// Slack are the two chat dialects. Every piece of user text — task names,
// goals, errors, summaries, step parameters — goes through Escape (or, inside
// a code span, through the code-span rules), so a task called
// "@everyone <@123> *bold*" shows those characters without pinging anyone or
// changing the formatting around it.
//
// Split cuts a message that is longer than a platform allows (DiscordLimit,
// SlackTextLimit, SlackBlockLimit) into chunks on line boundaries, never
// inside a code span when it can help it, an emoji or a multi-byte rune.
//
// Everything here is a pure function of its arguments: no I/O and no clock
// reads. Callers pass the times they mean (Queue's now).
package render
