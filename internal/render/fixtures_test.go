package render

import (
	"encoding/json"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// t0 is when the fixtures' story starts.
var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func fixtureTask(n int64, name string, status domain.Status) domain.Task {
	return domain.Task{
		Number:             n,
		Name:               name,
		Goal:               name,
		Status:             status,
		MaxIterations:      domain.DefaultMaxIterations,
		MaxStaleIterations: domain.DefaultMaxStaleIterations,
		CreatedAt:          t0,
	}
}

func step(iter int, action string, params map[string]any, ok bool) domain.Step {
	raw, err := json.Marshal(params)
	if err != nil {
		panic(err)
	}
	s := domain.Step{Iteration: iter, Action: action, Params: raw, Success: ok,
		Time: t0.Add(time.Duration(iter) * time.Minute)}
	if !ok {
		s.Error = "file does not exist"
	}
	return s
}
