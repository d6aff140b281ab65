package tasks_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// TestQuietChanges: the claim of a task and the commit of an iteration
// that posted nothing tell subscribers that nothing urgent was enqueued
// (plugin.Event.Quiet), so the notification service does not look; the
// commit of an iteration that posted a message does not.
func TestQuietChanges(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		var mu sync.Mutex
		var seen []string
		f.rt.Subscribe(plugin.TaskChanged, func(_ context.Context, ev plugin.Event) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("%s:%v", ev.Task.Status, ev.Quiet))
		})
		f.create("Keep notes", roomy)
		f.model.Decide("write_file", map[string]string{"path": "notes.md", "content": "one"}, 10, "continue")
		f.model.Decide("post_message", map[string]string{"text": "halfway"}, 20, "continue")
		f.step("w")
		f.step("w")
		mu.Lock()
		defer mu.Unlock()
		want := "[running:true running:true running:true running:false]"
		if got := fmt.Sprint(seen); got != want {
			t.Errorf("TaskChanged events (status:quiet) = %s; want %s: claims and the silent iteration quiet, the post not", got, want)
		}
	})
}
