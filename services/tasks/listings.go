package tasks

import (
	"sync"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// maxListedFiles bounds the files the listings of one service keep, in
// all, each listing counting one more for itself: past it they are
// dropped and listed again from the store.
const maxListedFiles = 100_000

// listings keeps, for each task this service committed an iteration of,
// the task's files as that commit left them, so that the task's next
// iteration on this replica — by any of its workers — opens its FileView
// with them instead of listing them from the store, a round trip an
// iteration (docs/PERFORMANCE.md, "Through the binary").
//
// A listing is used only for the claim that directly follows its commit:
// its task's event_seq then is the commit's plus one, the claim's own
// event. A task's files change only with an event of the task (an
// iteration's commit, a copy at creation), so any change since — an
// iteration on another replica, a task given back, edited or retried —
// moves the sequence further, and the listing is not used. (The one
// writer without an event, the import of an earlier version's
// workspaces, runs at start-up, before the workers: actions.Workspaces.)
// It is safe for concurrent use.
type listings struct {
	mu    sync.Mutex
	tasks map[int64]listing
	files int // files in tasks, all listings together, plus one a listing
}

// listing is a task's files after a commit of this service.
type listing struct {
	seq   int64                      // the task's event_seq after the commit
	files map[string]domain.TaskFile // by path; never changed
}

// view opens the files of claimed, a task just claimed, for its
// iteration: with the listing its last commit here left when nothing
// happened to the task between that commit and this claim, else listed
// from st when first used.
func (l *listings) view(st domain.FileReader, claimed domain.Task) *domain.FileView {
	l.mu.Lock()
	e, ok := l.tasks[claimed.Number]
	l.mu.Unlock()
	if ok && e.seq+1 == claimed.EventSeq {
		return domain.NewListedFileView(st, claimed.Number, e.files)
	}
	return domain.NewFileView(st, claimed.Number)
}

// committed keeps the files of after, a task whose iteration with files
// committed at now, for its next claim; a task that ended, or whose
// files the iteration never listed, is forgotten.
func (l *listings) committed(after domain.Task, files *domain.FileView, now time.Time) {
	var listed map[string]domain.TaskFile
	ok := false
	if files != nil && !after.Status.Terminal() {
		listed, ok = files.Committed(now)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop(after.Number)
	if !ok {
		return
	}
	if l.tasks == nil || l.files+len(listed)+1 > maxListedFiles {
		l.tasks, l.files = map[int64]listing{}, 0
	}
	l.tasks[after.Number] = listing{seq: after.EventSeq, files: listed}
	l.files += len(listed) + 1
}

// forget drops the listing of task number: its commit was not seen to go
// through.
func (l *listings) forget(number int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop(number)
}

// drop removes the listing of task number, if there is one; l.mu is held.
func (l *listings) drop(number int64) {
	if e, ok := l.tasks[number]; ok {
		l.files -= len(e.files) + 1
		delete(l.tasks, number)
	}
}
