package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
)

// scheduleRequest is the body of POST /api/schedules.
type scheduleRequest struct {
	Cron     *string `json:"cron"`
	Goal     *string `json:"goal"`
	Name     string  `json:"name"`
	Room     string  `json:"room"`
	Strategy string  `json:"strategy"`
	Overlap  string  `json:"overlap"`
	CatchUp  string  `json:"catch_up"`
}

// scheduleDetail is GET /api/schedules/{id}: the schedule and its latest
// events, newest first.
type scheduleDetail struct {
	domain.Schedule
	Events []domain.ScheduleEvent `json:"events"`
}

// apiCaller is who an API request acts as on schedules: the holder of the
// token is trusted as an admin, as with tasks, and sees every workspace.
func apiCaller(who string) domain.ScheduleCaller { return domain.ScheduleCaller{ID: who, Admin: true} }

// schedules answers 503 when the API was built without a scheduler.
func (a *API) schedules(w http.ResponseWriter) (domain.ScheduleControl, bool) {
	if a.o.Schedules == nil {
		writeError(w, http.StatusServiceUnavailable, "schedules are not available on this server")
		return nil, false
	}
	return a.o.Schedules, true
}

// failSchedule maps the scheduler's errors: an unknown schedule is 404,
// one the caller may not change 403, the rest as fail does.
func (a *API) failSchedule(w http.ResponseWriter, r *http.Request, id int64, err error) {
	switch {
	case errors.Is(err, domain.ErrScheduleNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("there is no schedule #%d", id))
	case errors.Is(err, domain.ErrScheduleForbidden):
		writeError(w, http.StatusForbidden, err.Error())
	default:
		a.fail(w, r, err)
	}
}

// scheduleID reads the {id} of the path.
// scheduleTarget reads what a request about one schedule needs: the
// scheduler, the schedule's id in the path and who asks; false when it
// answered the request already, with what is wrong.
func (a *API) scheduleTarget(w http.ResponseWriter, r *http.Request) (domain.ScheduleControl, int64, string, bool) {
	sched, ok := a.schedules(w)
	if !ok {
		return nil, 0, "", false
	}
	id, ok := scheduleID(w, r)
	if !ok {
		return nil, 0, "", false
	}
	who, err := requestor(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, 0, "", false
	}
	return sched, id, who, true
}

func scheduleID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	raw := r.PathValue("id")
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n <= 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q is not a schedule id: use a positive whole number", raw))
		return 0, false
	}
	return n, true
}

func (a *API) createSchedule(w http.ResponseWriter, r *http.Request) {
	sched, ok := a.schedules(w)
	if !ok {
		return
	}
	who, err := requestor(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var req scheduleRequest
	if err := decodeBody(w, r, &req); err != nil {
		a.badBody(w, r, err)
		return
	}
	switch {
	case req.Cron == nil:
		writeError(w, http.StatusBadRequest, `the body needs a "cron": five fields such as "0 9 * * 1-5" or a descriptor such as "@daily"`)
		return
	case req.Goal == nil:
		writeError(w, http.StatusBadRequest, `the body needs a "goal"`)
		return
	}
	if n := utf8.RuneCountInString(req.Name); n > domain.MaxNameLength {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the name is %d characters; the limit is %d", n, domain.MaxNameLength))
		return
	}
	in := domain.NewSchedule{
		Cron: *req.Cron, Goal: *req.Goal, Name: req.Name, Strategy: req.Strategy, Overlap: req.Overlap, CatchUp: req.CatchUp,
		RequestorID: who, Actor: who, Platform: "api", WorkspaceID: "local", Now: a.clk.Now(),
	}
	if room := strings.TrimSpace(req.Room); room != "" {
		if msg := a.checkRoom(room); msg != "" {
			writeError(w, http.StatusBadRequest, msg)
			return
		}
		in.Room, in.Platform = room, domain.RoomPlatform(room)
	}
	sc, err := sched.Create(r.Context(), in)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.log.Info("schedule created via API", "schedule", sc.ID, "requestor", who, "cron", sc.Cron)
	w.Header().Set("Location", fmt.Sprintf("/api/schedules/%d", sc.ID))
	WriteJSON(w, http.StatusCreated, sc)
}

func (a *API) listSchedules(w http.ResponseWriter, r *http.Request) {
	sched, ok := a.schedules(w)
	if !ok {
		return
	}
	who, err := requestor(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	list, err := sched.List(r.Context(), apiCaller(who))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if list == nil {
		list = []domain.Schedule{}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"schedules": list})
}

func (a *API) getSchedule(w http.ResponseWriter, r *http.Request) {
	sched, id, who, ok := a.scheduleTarget(w, r)
	if !ok {
		return
	}
	sc, err := sched.Get(r.Context(), id, apiCaller(who))
	if err != nil {
		a.failSchedule(w, r, id, err)
		return
	}
	evs, err := sched.Events(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if evs == nil {
		evs = []domain.ScheduleEvent{}
	}
	WriteJSON(w, http.StatusOK, scheduleDetail{Schedule: sc, Events: evs})
}

// changeSchedule answers a request that changes one schedule — DELETE
// /api/schedules/{id}, POST /api/schedules/{id}/pause and /resume — with
// change, made for the caller; done says what it did, for the log.
func (a *API) changeSchedule(done string, change func(ctx context.Context, sched domain.ScheduleControl, id int64, who domain.ScheduleCaller) (domain.Schedule, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sched, id, who, ok := a.scheduleTarget(w, r)
		if !ok {
			return
		}
		var none struct{}
		if err := decodeOptional(w, r, &none); err != nil {
			a.badBody(w, r, err)
			return
		}
		sc, err := change(r.Context(), sched, id, apiCaller(who))
		if err != nil {
			a.failSchedule(w, r, id, err)
			return
		}
		a.log.Info("schedule "+done+" via API", "schedule", id, "actor", who)
		WriteJSON(w, http.StatusOK, sc)
	}
}

func deleteSchedule(ctx context.Context, sched domain.ScheduleControl, id int64, who domain.ScheduleCaller) (domain.Schedule, error) {
	return sched.Delete(ctx, id, who)
}

// pauseSchedule pauses (paused) or resumes a schedule.
func pauseSchedule(paused bool) func(context.Context, domain.ScheduleControl, int64, domain.ScheduleCaller) (domain.Schedule, error) {
	return func(ctx context.Context, sched domain.ScheduleControl, id int64, who domain.ScheduleCaller) (domain.Schedule, error) {
		return sched.Pause(ctx, id, paused, who)
	}
}
