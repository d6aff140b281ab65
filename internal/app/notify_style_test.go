package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/discord"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/config"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/notify"
)

// TestBadNotifyStyleStopsStartUp: serve with a TASKLOOM_NOTIFY_STYLE it
// does not know exits non-zero with one line naming the variable.
func TestBadNotifyStyleStopsStartUp(t *testing.T) {
	t.Parallel()
	if config.NotifyCard != notify.StyleCard || config.NotifyBatch != notify.StyleBatch {
		t.Fatalf("config's styles %q, %q are not the notification service's %q, %q",
			config.NotifyBatch, config.NotifyCard, notify.StyleBatch, notify.StyleCard)
	}
	code, stderr := refusedServe(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0",
		"TASKLOOM_NOTIFY_STYLE": "stream"})
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code == app.ExitOK || len(lines) != 1 || lines[0] != `taskloom: TASKLOOM_NOTIFY_STYLE="stream": want batch or card` {
		t.Fatalf("exit %d, stderr:\n%s\nwant one line naming TASKLOOM_NOTIFY_STYLE", code, stderr)
	}
}

// TestCardStyleReachesTheNotificationService: with
// TASKLOOM_NOTIFY_STYLE=card the core's notifications edit a Discord
// task's card at each flush instead of posting new messages.
func TestCardStyleReachesTheNotificationService(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const guild, channel = "1300000000000000010", "1300000000000000020"
	srv := discordfake.New(t, discordfake.WithGuild(discordfake.Guild{ID: guild, ChannelIDs: []string{channel}}))
	dir := t.TempDir()
	cfg, err := config.Load(envOf(map[string]string{"TASKLOOM_DATA_DIR": dir, "TASKLOOM_NOTIFY_STYLE": "card"}))
	if err != nil {
		t.Fatal(err)
	}
	model := testkit.NewScriptedModel()
	st := teststore.SQLite(t)
	core := app.NewCore(app.CoreOptions{Config: cfg, Store: st, Model: model, Clock: clock.NewFake(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Owner: "test"})
	ad, err := discord.New(discord.Options{Token: srv.Token(), APIURL: srv.URL(), Runtime: core.Runtime})
	if err != nil {
		t.Fatal(err)
	}
	if err := core.Runtime.Register(&plugin.Plugin{Name: "chat", Platforms: []plugin.Platform{ad}}); err != nil {
		t.Fatal(err)
	}
	if err := core.Runtime.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { core.Runtime.Stop(context.Background()) })
	if err := core.Tasks.Stop(ctx); err != nil { // the test steps the task itself
		t.Fatal(err)
	}
	task, err := core.Tasks.Create(ctx, domain.NewTask{Goal: "Build auth", RoomID: "discord:" + channel, RequestorID: "u1", Platform: "discord"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{20, 40} {
		model.Decide("list_files", nil, p, "continue")
		if did, err := core.Tasks.Step(ctx, "worker"); err != nil || !did {
			t.Fatalf("Step = %v, %v", did, err)
		}
		if _, err := core.Notify.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	now, err := st.GetTask(ctx, task.Number)
	if err != nil {
		t.Fatal(err)
	}
	ms := srv.Messages(channel)
	if len(ms) != 1 || ms[0].Edits != 1 || !strings.Contains(ms[0].Content, fmt.Sprintf("%d%%  Running", now.Progress)) ||
		!strings.Contains(ms[0].Content, "Iteration: 2") {
		t.Fatalf("messages = %+v; want task #%d's card, edited once", ms, task.Number)
	}
}
