package tasks_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// TestMessageHandledTwiceMakesOneTask: a person's `create task` is made
// for its message (domain.NewTask.Origin). The commit of the first create
// goes through but its answer is lost; Create tries again and finds the
// task by its origin. Then the same message is handled a second time, a
// moment later (another replica took it too): it is answered with the
// same task. One task, one TaskCreated — whatever the second handling's
// time, which a search by goal and creation time would not find. The
// 30-minute soak saw two Discord commands make two tasks each.
func TestMessageHandledTwiceMakesOneTask(t *testing.T) {
	f, proxy := unheardFixture(t)
	var created atomic.Int32
	f.rt.Subscribe(plugin.TaskCreated, func(context.Context, plugin.Event) { created.Add(1) })
	in := domain.NewTask{Goal: "soak sub d440", RequestorID: "u1", Platform: "discord", RoomID: "discord:D1",
		Origin: "discord:1576420114507497472", Now: f.clk.Now()}
	proxy.LoseAnswers(1, "INSERT INTO task_origins")
	first, err := f.drivenChange(func() (domain.Task, error) { return f.svc.Create(f.ctx, in) })
	if proxy.Lost() != 1 {
		t.Fatalf("%d answers lost, want 1", proxy.Lost())
	}
	if err != nil || first.Number != 1 {
		t.Fatalf("Create = #%d, %v; want task #1", first.Number, err)
	}
	again := in
	again.Now = in.Now.Add(700 * time.Millisecond)
	second, err := f.svc.Create(f.ctx, again)
	if err != nil || second.Number != first.Number || second.Goal != in.Goal {
		t.Fatalf("the message handled again: Create = #%d, %v; want #%d", second.Number, err, first.Number)
	}
	if all, err := f.store.ListTasks(f.ctx, domain.TaskFilter{}); err != nil || len(all) != 1 {
		t.Fatalf("%d tasks, %v; want one", len(all), err)
	}
	if n := created.Load(); n != 1 {
		t.Errorf("TaskCreated emitted %d times; want once", n)
	}
	f.check()
}
