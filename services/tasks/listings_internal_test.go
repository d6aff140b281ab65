package tasks

import (
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// TestListingsBounded: the listings kept count a file each and one for
// each listing, and past maxListedFiles they are dropped, even when the
// tasks have no files.
func TestListingsBounded(t *testing.T) {
	var l listings
	files := domain.NewListedFileView(nil, 1, nil)
	for n := range int64(maxListedFiles + 10) {
		l.committed(domain.Task{Number: n + 1, EventSeq: 3, Status: domain.StatusRunning}, files, time.Time{})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.tasks) == 0 || len(l.tasks) > maxListedFiles || l.files != len(l.tasks) {
		t.Errorf("%d listings counted as %d; want at most %d, each counted once", len(l.tasks), l.files, maxListedFiles)
	}
	l.drop(maxListedFiles + 10)
	l.drop(maxListedFiles + 10)
	if l.files != len(l.tasks) {
		t.Errorf("after a drop, %d listings counted as %d", len(l.tasks), l.files)
	}
}
