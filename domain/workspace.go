package domain

// DMWorkspace is the workspace of the tasks a person creates in direct
// messages on platform: one of their own, so that what they ask the bot
// in private stays private to them (docs/security.md).
func DMWorkspace(platform, user string) string { return "dm:" + platform + ":" + user }
