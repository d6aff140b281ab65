package render

import (
	"time"

	"github.com/taskloom/taskloom/plugin"
)

const plugin_completed = plugin.StatusCompleted

// t0 is when the fixtures' story starts.
var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func fixtureTask(n int64, name string, status plugin.Status) plugin.Task {
	return plugin.Task{
		Number:             n,
		Name:               name,
		Goal:               name,
		Status:             status,
		MaxIterations:      plugin.DefaultMaxIterations,
		MaxStaleIterations: plugin.DefaultMaxStaleIterations,
		CreatedAt:          t0,
	}
}
