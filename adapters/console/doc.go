// Package console is the terminal platform: with no Discord or Slack
// configured and a terminal on stdin, what is typed goes through the
// runtime's message pipeline as if it were a DM to the bot, and replies and
// room notifications (room "console") are printed.
package console
