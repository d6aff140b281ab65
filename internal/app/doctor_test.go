package app_test

import (
	"strings"
	"testing"

	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
)

// TestDoctor: doctor checks the store, the model, each configured
// platform and the sandbox, prints a row for each, and exits 1 when one
// failed — here a Discord token Discord does not know — naming the
// variable; with every setting right it exits 0. It changes nothing: no
// store file is made.
func TestDoctor(t *testing.T) {
	t.Parallel()
	model := testkit.NewOpenAI(t)
	dc := discordfake.New(t)
	sl := slackfake.New(t)
	env := map[string]string{
		"TASKLOOM_DATA_DIR": t.TempDir(),
		"OPENAI_BASE_URL":   model.URL(), "OPENAI_MODEL": "gpt-4o-mini",
		"DISCORD_BOT_TOKEN": "not-the-token", "DISCORD_API_URL": dc.URL(),
		"SLACK_BOT_TOKEN": sl.BotToken(), "SLACK_SIGNING_SECRET": sl.SigningSecret(), "SLACK_API_URL": sl.APIURL(),
	}
	code, out, stderr := run(t, env, "doctor")
	if code != app.ExitFailed {
		t.Fatalf("doctor with a wrong Discord token: exit %d, want %d\n%s%s", code, app.ExitFailed, out, stderr)
	}
	for _, want := range []string{"CHECK", "store    ok", "SQLite: none yet", "model    ok", "gpt-4o-mini answers",
		"discord  failed", "DISCORD_BOT_TOKEN", "slack    ok", "workspace", "sandbox  not set up"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's table lacks %q:\n%s", want, out)
		}
	}
	// The table alone: a log line would land between its lines on a
	// terminal.
	if stderr != "" {
		t.Errorf("doctor wrote beside its table:\n%s", stderr)
	}
	env["DISCORD_BOT_TOKEN"] = strings.TrimPrefix(dc.Token(), "Bot ")
	if code, out, stderr := run(t, env, "doctor"); code != app.ExitOK || !strings.Contains(out, "discord  ok") {
		t.Fatalf("doctor with every setting right: exit %d\n%s%s", code, out, stderr)
	}
	for _, r := range model.Requests() {
		if r.Path == "/v1/chat/completions" {
			t.Error("doctor spent a completion")
		}
	}
}

// TestDoctorTellsTheSchema: doctor says which schema version the store is
// at, and of a database never migrated that it is not yet, and how to — an
// operator pointing a new host at a fresh database learns what to run
// rather than reading "PostgreSQL answers".
func TestDoctorTellsTheSchema(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "DATABASE_URL": testkit.PostgresURL(t)}
	if code, out, stderr := run(t, env, "doctor"); code != app.ExitOK || !strings.Contains(out, "store    warning") || !strings.Contains(out, "PostgreSQL answers, not migrated yet: run taskloom migrate") {
		t.Fatalf("doctor of a database never migrated: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := run(t, env, "migrate"); code != app.ExitOK || !strings.HasPrefix(out, "applied migrations 1 to ") {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := run(t, env, "doctor"); code != app.ExitOK || !strings.Contains(out, "store    ok") || !strings.Contains(out, "PostgreSQL, schema version ") || !strings.Contains(out, "(up to date)") {
		t.Fatalf("doctor of a migrated database: exit %d\n%s%s", code, out, stderr)
	}
	// SQLite too, once serve or migrate made the file.
	env = map[string]string{"TASKLOOM_DATA_DIR": t.TempDir()}
	if code, out, stderr := run(t, env, "migrate"); code != app.ExitOK {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := run(t, env, "doctor"); code != app.ExitOK || !strings.Contains(out, "schema version ") || !strings.Contains(out, "(up to date)") {
		t.Fatalf("doctor of a migrated SQLite file: exit %d\n%s%s", code, out, stderr)
	}
}
