package slack_test

import (
	"strings"
	"testing"
)

// TestTaskScheduleSlashCommand: `/task schedule …` is read by the chat
// grammar of docs/schedules.md: a schedule is made, listed, paused, and
// a bad expression is refused in one sentence, shown to its sender alone.
func TestTaskScheduleSlashCommand(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		for _, tc := range []struct{ text, want, responseType string }{
			{"schedule @daily task check the backups", `Schedule #1 "Check the backups" created: ` + "`@daily`", "in_channel"},
			{"schedule every `0 9 * * 1-5` task summarise the alerts", "Schedule #2", "in_channel"},
			{"schedule list", "Schedules (2)", "in_channel"},
			{"schedule pause 1", "Schedule #1 \"Check the backups\" paused.", "in_channel"},
			{"schedule every `0 25 * * *` task x", "Cannot create the schedule: the cron expression", "ephemeral"},
			{"schedule resume 9", "There is no schedule #9 here.", "ephemeral"},
		} {
			d := e.deliver(e.fake.SlashCommand("C7", alice, tc.text))
			got, ok := e.immediate(d)
			if !ok {
				t.Fatalf("/task %s: acknowledged without the answer", tc.text)
			}
			if !strings.Contains(got.Text, tc.want) || got.ResponseType != tc.responseType {
				t.Errorf("/task %s: %s answer %q; want %s containing %q", tc.text, got.ResponseType, got.Text, tc.responseType, tc.want)
			}
		}
	})
}
