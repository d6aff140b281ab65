package httpapi

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/taskloom/taskloom/domain"
)

// How GET /api/tasks/{number} shows a task's steps: a page of them,
// bounded however many steps the task has and however long their results
// are (up to 1 MiB each).
const (
	// DefaultTaskSteps is how many of the latest steps a task's page shows
	// without steps=; MaxTaskSteps is the most steps= may ask for.
	DefaultTaskSteps = 20
	MaxTaskSteps     = 100
	// StepResultRunes is how much of each step's result the page shows:
	// its first characters. GET /api/tasks/{number}/steps/{iteration}
	// shows the whole of one.
	StepResultRunes = 8000
)

// getTask shows a task and a page of its steps: the latest ones, or with
// before= those of iterations below it, oldest first, their count and
// where the page of older ones starts.
func (a *API) getTask(w http.ResponseWriter, r *http.Request) {
	n, ok := taskNumber(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	limit, ok := queryInt(w, q.Get("steps"), "steps", DefaultTaskSteps, 0, MaxTaskSteps)
	if !ok {
		return
	}
	before, ok := queryInt(w, q.Get("before"), "before", 0, 1, maxIteration)
	if !ok {
		return
	}
	beforeCall, ok := queryInt(w, q.Get("before_call"), "before_call", 0, 0, maxIteration)
	if !ok {
		return
	}
	if beforeCall > 0 && before == 0 {
		writeError(w, http.StatusBadRequest, "before_call needs before: it is the call of that iteration the page ends before")
		return
	}
	t, err := a.store.GetTask(r.Context(), n)
	if err != nil {
		a.fail(w, r, notFound(n, err))
		return
	}
	// One step more than shown tells whether older ones are left.
	page, err := a.store.PageSteps(r.Context(), n, domain.StepQuery{Limit: limit + 1, Before: before, BeforeCall: beforeCall, ResultRunes: StepResultRunes})
	if err != nil {
		a.fail(w, r, fmt.Errorf("steps of task #%d: %w", n, err))
		return
	}
	steps := page.Steps
	body := taskWithSteps{taskBody: taskOf(t), StepsTotal: page.Total}
	if len(steps) > limit {
		steps = steps[len(steps)-limit:]
		if limit > 0 {
			next, call := steps[0].Iteration, steps[0].Call
			body.StepsNext = &next
			if call > 0 {
				body.StepsNextCall = &call
			}
		}
	}
	body.Steps = make([]stepBody, 0, len(steps))
	for _, s := range steps {
		body.Steps = append(body.Steps, stepOf(s))
	}
	WriteJSON(w, http.StatusOK, body)
}

// taskStep shows one step of a task, its result whole.
func (a *API) taskStep(w http.ResponseWriter, r *http.Request) {
	n, ok := taskNumber(w, r)
	if !ok {
		return
	}
	raw := r.PathValue("iteration")
	it, err := strconv.Atoi(raw)
	if err != nil || it <= 0 || it > maxIteration {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q is not an iteration: use a positive whole number", raw))
		return
	}
	call, ok := queryInt(w, r.URL.Query().Get("call"), "call", 0, 0, maxIteration)
	if !ok {
		return
	}
	if _, err := a.store.GetTask(r.Context(), n); err != nil {
		a.fail(w, r, notFound(n, err))
		return
	}
	s, err := a.store.StepCall(r.Context(), n, it, call)
	if errors.Is(err, domain.ErrNotFound) {
		if call > 0 {
			writeError(w, http.StatusNotFound, fmt.Sprintf("task #%d has no call %d in iteration %d", n, call, it))
			return
		}
		writeError(w, http.StatusNotFound, fmt.Sprintf("task #%d has no step of iteration %d", n, it))
		return
	}
	if err != nil {
		a.fail(w, r, fmt.Errorf("step %d of task #%d: %w", it, n, err))
		return
	}
	WriteJSON(w, http.StatusOK, stepOf(s))
}

// maxIteration is the highest iteration a step can have: the column is
// 32 bits.
const maxIteration = math.MaxInt32

// queryInt reads a whole number from lo to hi from a query parameter
// named name: def when v is empty. A bad one gets 400, and false.
func queryInt(w http.ResponseWriter, v, name string, def, lo, hi int) (int, bool) {
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%s must be a whole number from %d to %d", name, lo, hi))
		return 0, false
	}
	return n, true
}
