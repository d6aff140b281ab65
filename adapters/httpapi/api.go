package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// Limits of the API.
const (
	MaxBodyBytes     = 64 << 10 // a request body over this gets 413
	DefaultPageSize  = 100
	MaxPageSize      = 500
	MaxQueryLength   = 200
	MaxRoomLength    = 200
	MaxRequestorLen  = 100
	MaxIterationsCap = 10000 // the most max_iterations a request may ask for
	MaxStaleCap      = 1000
	// MaxTextLength bounds, in characters, what a person sends with a
	// task: an answer, a retry's context, a denial's reason.
	MaxTextLength = 4000
	// RequestorHeader names whom a caller holding the API token speaks
	// for: the task's requestor_id and the actor of its events become
	// "api:<name>". Without a token configured it is ignored, and every
	// caller is "api".
	RequestorHeader = "X-Taskloom-Requestor"
)

// APIOptions configure the JSON API, the event stream and the dashboard.
type APIOptions struct {
	Store domain.Store
	// Tasks is the task service. The holder of the API token is trusted
	// as an admin: whoever the API lets through may decide on any task,
	// as they may pause or cancel it.
	Tasks domain.TaskControl
	// Schedules, when set, serves /api/schedules (docs/schedules.md).
	Schedules domain.ScheduleControl
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every /api call (TASKLOOM_API_TOKEN).
	Token  string
	Clock  clock.Clock
	Logger *slog.Logger
	// Runtime, when set, wakes event streams as soon as a task changes in
	// this process (other replicas' changes are found by polling), and
	// says which rooms a platform serves.
	Runtime *plugin.Runtime
	// Metrics, when set, is served open at GET /metrics.
	Metrics http.Handler
	// Defaults for tasks created without limits (TASKLOOM_MAX_ITERATIONS,
	// TASKLOOM_MAX_STALE); zero leaves the task defaults.
	MaxIterations      int
	MaxStaleIterations int
	// Poll is how often an event stream looks for events it was not woken
	// for; default 2s. KeepAlive is how often an idle stream sends a
	// comment so proxies keep it open; default 15s.
	Poll      time.Duration
	KeepAlive time.Duration
	// MaxStreams is how many event streams may be open at once; default
	// DefaultMaxStreams. MaxStreamsPerClient is how many of them one
	// client may hold; default DefaultMaxStreamsPerClient, and never more
	// than MaxStreams.
	MaxStreams          int
	MaxStreamsPerClient int
}

// API serves the task API of docs/api.md and the dashboard.
type API struct {
	o     APIOptions
	store domain.Store
	clk   clock.Clock
	log   *slog.Logger
	token [32]byte // sha256 of the token, compared in constant time
	bell  *bell
	hint  hint

	streams streamSlots // event streams open

	closeOnce sync.Once
	done      chan struct{} // closed by Close: event streams end
}

// NewAPI returns the API; Mount puts it on a Server.
func NewAPI(o APIOptions) *API {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 15 * time.Second
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.MaxStreamsPerClient <= 0 {
		o.MaxStreamsPerClient = DefaultMaxStreamsPerClient
	}
	o.MaxStreamsPerClient = min(o.MaxStreamsPerClient, o.MaxStreams)
	a := &API{o: o, store: o.Store, clk: o.Clock, log: o.Logger.With("component", "httpapi"), bell: newBell(), done: make(chan struct{})}
	if o.Token != "" {
		a.token = sha256.Sum256([]byte(o.Token))
	}
	if o.Runtime != nil {
		ring := func(context.Context, plugin.Event) { a.bell.Ring() }
		for _, t := range []plugin.EventType{plugin.TaskCreated, plugin.TaskChanged, plugin.TaskEnded} {
			o.Runtime.Subscribe(t, ring)
		}
	}
	return a
}

// Close ends every open event stream (and any opened later), so that
// http.Server.Shutdown, which waits for requests to finish, is not held up
// by clients that would listen forever: register it with
// http.Server.RegisterOnShutdown. The streams' clients reconnect to
// another replica with Last-Event-ID and lose nothing.
func (a *API) Close() {
	a.closeOnce.Do(func() { close(a.done) })
}

// route is one endpoint; the OpenAPI description lists the same ones.
type route struct {
	pattern string
	handler http.HandlerFunc
	api     bool // under /api: needs the token when one is set
}

func (a *API) routes() []route {
	rs := []route{
		{"GET /api/tasks", a.listTasks, true},
		{"POST /api/tasks", a.createTask, true},
		{"GET /api/tasks/{number}", a.getTask, true},
		{"GET /api/tasks/{number}/steps/{iteration}", a.taskStep, true},
		{"GET /api/tasks/{number}/events", a.taskEvents, true},
		{"GET /api/tasks/{number}/files", a.taskFiles, true},
		{"GET /api/tasks/{number}/files/{path...}", a.taskFile, true},
		{"POST /api/tasks/{number}/pause", a.control("pause"), true},
		{"POST /api/tasks/{number}/resume", a.control("resume"), true},
		{"POST /api/tasks/{number}/cancel", a.control("cancel"), true},
		{"POST /api/tasks/{number}/answer", a.answerTask, true},
		{"POST /api/tasks/{number}/retry", a.retryTask, true},
		{"POST /api/tasks/{number}/approve", a.approveTask, true},
		{"POST /api/tasks/{number}/deny", a.denyTask, true},
		{"GET /api/schedules", a.listSchedules, true},
		{"POST /api/schedules", a.createSchedule, true},
		{"GET /api/schedules/{id}", a.getSchedule, true},
		{"DELETE /api/schedules/{id}", a.changeSchedule("deleted", deleteSchedule), true},
		{"POST /api/schedules/{id}/pause", a.changeSchedule("paused", pauseSchedule(true)), true},
		{"POST /api/schedules/{id}/resume", a.changeSchedule("resumed", pauseSchedule(false)), true},
		{"GET /api/notifications", a.listNotifications, true},
		{"POST /api/notifications/{id}/retry", a.retryNotification, true},
		{"GET /api/events", a.events, true},
		{"GET /api/stats", a.stats, true},
		{"GET /api/strategies", a.strategies, true},
		{"GET /api/memories", a.listMemories, true},
		{"DELETE /api/memories", a.forgetPerson, true},
		{"POST /api/knowledge", a.addKnowledge, true},
		{"GET /api/knowledge", a.listKnowledge, true},
		{"DELETE /api/knowledge/{id}", a.deleteKnowledge, true},
		// Anything else under /api gets a JSON 404 or 405, not the
		// mux's plain text.
		{"/api/", a.unknown, true},
		{"GET /{$}", a.dashboardPage, false},
		{"GET /dashboard/{file}", a.dashboardAsset, false},
	}
	if a.o.Metrics != nil {
		rs = append(rs, route{"GET /metrics", a.o.Metrics.ServeHTTP, false})
	}
	return rs
}

// Mount adds the API, the dashboard and (when configured) /metrics to s.
func (a *API) Mount(s *Server) {
	for _, r := range a.routes() {
		h := http.Handler(r.handler)
		if r.api {
			h = a.authorize(h)
		}
		s.Handle(r.pattern, h)
	}
}

// MountPlugins adds the routes plugins serve (plugin.Runtime.Routes, under
// /plugins/<name>/) to s, behind the same token check as /api: a plugin's
// handler may read or change what the API guards, so it is reached by no
// one the API would turn away.
func (a *API) MountPlugins(s *Server, routes []plugin.MountedRoute) {
	for _, r := range routes {
		s.Handle(r.Pattern, a.authorize(r.Route.Handler))
	}
}

// authorize lets a request through when no token is configured or when it
// carries the token as a bearer credential.
func (a *API) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.o.Token != "" {
			scheme, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			sum := sha256.Sum256([]byte(strings.TrimSpace(cred)))
			// Hashing first makes the comparison take the same time
			// whatever the length of the guess.
			ok := strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare(sum[:], a.token[:]) == 1
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="taskloom"`)
				msg := "this API needs a token: send Authorization: Bearer <TASKLOOM_API_TOKEN>"
				if r.Header.Get("Authorization") != "" {
					msg = "the API token is wrong"
				}
				writeError(w, http.StatusUnauthorized, msg)
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), tokenKey{}, true))
		}
		next.ServeHTTP(w, r)
	})
}

// tokenKey marks the context of a request that carried the API token.
type tokenKey struct{}

// carriedToken reports whether authorize found the API token on r.
func carriedToken(r *http.Request) bool {
	ok, _ := r.Context().Value(tokenKey{}).(bool)
	return ok
}

// writeError writes the API's error body: {"error": "a sentence"}.
func writeError(w http.ResponseWriter, code int, msg string) {
	WriteJSON(w, code, map[string]string{"error": msg})
}

// fail maps an error of the task service or the store to a response: the
// sentence for a person, the detail in the log.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over %d KiB", mbe.Limit>>10))
	case errors.Is(err, domain.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, domain.ErrInvalidState), errors.Is(err, domain.ErrTerminal), errors.Is(err, tasks.ErrNotEnded):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, domain.ErrInvalid):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, domain.ErrLimit):
		writeError(w, http.StatusTooManyRequests, err.Error())
	case r.Context().Err() != nil:
		// The client went away; nobody reads the answer.
	default:
		a.log.Error("API request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal error; the server log has the detail")
	}
}

func (a *API) unknown(w http.ResponseWriter, r *http.Request) {
	// A path the API knows, asked with another method: 405.
	for _, rt := range a.routes() {
		method, path, ok := strings.Cut(rt.pattern, " ")
		if !ok || !strings.HasPrefix(path, "/api/") || method == r.Method {
			continue
		}
		if matchPath(path, r.URL.Path) {
			w.Header().Set("Allow", allowed(a.routes(), path))
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path))
			return
		}
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path))
}

// matchPath matches a path against a pattern whose wildcards are whole
// segments ({number}).
func matchPath(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if ps[i] != xs[i] && !(strings.HasPrefix(ps[i], "{") && xs[i] != "") {
			return false
		}
	}
	return true
}

func allowed(rs []route, path string) string {
	var ms []string
	for _, rt := range rs {
		if m, p, ok := strings.Cut(rt.pattern, " "); ok && p == path {
			ms = append(ms, m)
		}
	}
	return strings.Join(ms, ", ")
}

// taskNumber reads the {number} of the path.
func taskNumber(w http.ResponseWriter, r *http.Request) (int64, bool) {
	raw := r.PathValue("number")
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n <= 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q is not a task number: use a positive whole number", raw))
		return 0, false
	}
	return n, true
}

// requestor names who is asking, as the task's requestor_id and the
// actor of its events. Only a request that carried the API token may name
// someone (X-Taskloom-Requestor), and the name is recorded as
// "api:<name>", so that it can never pass for a chat user, whose
// approvals and limits are their own. Any other request is "api",
// whatever it sends: without a token anyone on the machine could claim
// any name.
func requestor(r *http.Request) (string, error) {
	v := strings.TrimSpace(r.Header.Get(RequestorHeader))
	if v == "" || !carriedToken(r) {
		return "api", nil
	}
	// A name is shown to people who decide on what it did: one that
	// hides characters (zero-width, bidirectional, fillers) could pass
	// for another's.
	if utf8.RuneCountInString(v) > MaxRequestorLen || strings.IndexFunc(v, func(r rune) bool {
		return domain.Invisible(r) || (unicode.IsSpace(r) && r != ' ')
	}) >= 0 {
		return "", fmt.Errorf("%s must be at most %d characters that show: no control, zero-width, bidirectional or other invisible character", RequestorHeader, MaxRequestorLen)
	}
	return "api:" + v, nil
}

func (a *API) listTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := domain.TaskFilter{Query: strings.TrimSpace(q.Get("q"))}
	if utf8.RuneCountInString(f.Query) > MaxQueryLength {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("q is over %d characters", MaxQueryLength))
		return
	}
	for _, s := range strings.Split(q.Get("status"), ",") {
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" {
			continue
		}
		if st := domain.Status(s); st.Valid() {
			f.Statuses = append(f.Statuses, st)
			continue
		}
		writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown status %q: use queued, running, paused, waiting, completed, failed, stalemate or canceled", s))
		return
	}
	switch q.Get("order") {
	case "", "number":
		f.Order = domain.OrderNumber
	case "recent":
		f.Order = domain.OrderRecent
	case "queue":
		f.Order = domain.OrderQueue
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown order %q: use number, recent or queue", q.Get("order")))
		return
	}
	limit, msg := pageLimit(q.Get("limit"))
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "after must be a task number (the next value of the previous page)")
			return
		}
		if f.Order == domain.OrderQueue {
			writeError(w, http.StatusBadRequest, "after pages order=number and order=recent; order=queue is one page")
			return
		}
		f.AfterNumber = n
	}
	all := f
	all.AfterNumber = 0
	total, err := a.store.CountTasks(r.Context(), all)
	if err != nil {
		a.fail(w, r, fmt.Errorf("count tasks: %w", err))
		return
	}
	f.Limit = limit + 1 // one more tells whether there is a next page
	list, err := a.store.ListTasks(r.Context(), f)
	if err != nil {
		a.fail(w, r, fmt.Errorf("list tasks: %w", err))
		return
	}
	out := listBody{Tasks: make([]taskBody, 0, min(len(list), limit)), Total: total}
	if len(list) > limit {
		list = list[:limit]
		if f.Order != domain.OrderQueue {
			next := list[len(list)-1].Number
			out.Next = &next
		}
	}
	for _, t := range list {
		out.Tasks = append(out.Tasks, taskOf(t))
	}
	WriteJSON(w, http.StatusOK, out)
}

// pageLimit reads a limit= of a list: DefaultPageSize when empty; a
// non-empty string says what is wrong.
func pageLimit(v string) (int, string) {
	if v == "" {
		return DefaultPageSize, ""
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPageSize {
		return 0, fmt.Sprintf("limit must be a whole number from 1 to %d", MaxPageSize)
	}
	return n, ""
}

// notFound words a store's ErrNotFound for the person asking.
func notFound(n int64, err error) error {
	if errors.Is(err, domain.ErrNotFound) {
		return noTask(n)
	}
	return fmt.Errorf("task #%d: %w", n, err)
}

// refused words an error of the task service for the person asking: its
// own sentence, or "there is no task #7".
func refused(n int64, err error) error {
	if errors.Is(err, domain.ErrNotFound) {
		return noTask(n)
	}
	return err
}

// noTask is the 404 sentence: "there is no task #7".
type noTask int64

func (n noTask) Error() string { return fmt.Sprintf("there is no task #%d", int64(n)) }
func (n noTask) Unwrap() error { return domain.ErrNotFound }

func (a *API) taskEvents(w http.ResponseWriter, r *http.Request) {
	n, ok := taskNumber(w, r)
	if !ok {
		return
	}
	var after int64
	if v := r.URL.Query().Get("after"); v != "" {
		var err error
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			writeError(w, http.StatusBadRequest, "after must be an event sequence number")
			return
		}
	}
	if _, err := a.store.GetTask(r.Context(), n); err != nil {
		a.fail(w, r, notFound(n, err))
		return
	}
	evs, err := a.store.TaskEvents(r.Context(), n, after)
	if err != nil {
		a.fail(w, r, fmt.Errorf("events of task #%d: %w", n, err))
		return
	}
	out := eventsBody{Events: make([]eventBody, 0, len(evs))}
	for _, e := range evs {
		out.Events = append(out.Events, eventOf(e))
	}
	WriteJSON(w, http.StatusOK, out)
}

// createRequest is the body of POST /api/tasks. Pointers tell "absent"
// from zero.
type createRequest struct {
	Goal               *string `json:"goal"`
	Name               string  `json:"name"`
	Room               string  `json:"room"`
	MaxIterations      *int    `json:"max_iterations"`
	MaxStaleIterations *int    `json:"max_stale_iterations"`
	// MaxTokens is the token budget: absent for the service's default,
	// 0 for no limit.
	MaxTokens *int64 `json:"max_tokens"`
	// Strategy is how the task is worked (docs/strategies.md); absent is loop.
	Strategy string `json:"strategy"`
}

func (a *API) createTask(w http.ResponseWriter, r *http.Request) {
	who, err := requestor(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var req createRequest
	if err := decodeBody(w, r, &req); err != nil {
		a.badBody(w, r, err)
		return
	}
	in, msg := a.newTask(req, who)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	t, err := a.o.Tasks.Create(r.Context(), in)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.log.Info("task created via API", "task", t.Number, "requestor", who, "room", t.RoomID)
	w.Header().Set("Location", fmt.Sprintf("/api/tasks/%d", t.Number))
	WriteJSON(w, http.StatusCreated, taskOf(t))
}

// newTask validates a create request; a non-empty string says what is wrong.
func (a *API) newTask(req createRequest, who string) (domain.NewTask, string) {
	if req.Goal == nil {
		return domain.NewTask{}, `the body needs a "goal"`
	}
	goal := *req.Goal
	switch n := utf8.RuneCountInString(goal); {
	case strings.TrimSpace(goal) == "":
		return domain.NewTask{}, "the goal is empty: say what the task should do"
	case domain.Blank(goal):
		return domain.NewTask{}, "the goal shows nothing: it holds only invisible characters"
	case n > domain.MaxGoalLength:
		return domain.NewTask{}, fmt.Sprintf("the goal is %d characters; the limit is %d", n, domain.MaxGoalLength)
	}
	if n := utf8.RuneCountInString(req.Name); n > domain.MaxNameLength {
		return domain.NewTask{}, fmt.Sprintf("the name is %d characters; the limit is %d", n, domain.MaxNameLength)
	}
	in := domain.NewTask{
		Goal: goal, Name: req.Name, RequestorID: who, Actor: who,
		Platform: "api", WorkspaceID: "local",
		MaxIterations: a.o.MaxIterations, MaxStaleIterations: a.o.MaxStaleIterations,
		Strategy: strings.TrimSpace(req.Strategy), Now: a.clk.Now(),
	}
	if req.MaxIterations != nil {
		if *req.MaxIterations < 1 || *req.MaxIterations > MaxIterationsCap {
			return domain.NewTask{}, fmt.Sprintf("max_iterations must be from 1 to %d", MaxIterationsCap)
		}
		in.MaxIterations = *req.MaxIterations
	}
	if req.MaxStaleIterations != nil {
		if *req.MaxStaleIterations < 1 || *req.MaxStaleIterations > MaxStaleCap {
			return domain.NewTask{}, fmt.Sprintf("max_stale_iterations must be from 1 to %d", MaxStaleCap)
		}
		in.MaxStaleIterations = *req.MaxStaleIterations
	}
	if req.MaxTokens != nil {
		if *req.MaxTokens < 0 {
			return domain.NewTask{}, fmt.Sprintf("max_tokens is %d: use 0 for no limit, or a positive whole number", *req.MaxTokens)
		}
		budget := *req.MaxTokens
		in.MaxTokens = &budget
	}
	if room := strings.TrimSpace(req.Room); room != "" {
		if msg := a.checkRoom(room); msg != "" {
			return domain.NewTask{}, msg
		}
		in.RoomID, in.Platform = room, domain.RoomPlatform(room)
	}
	return in, ""
}

// checkRoom accepts "<platform>:<channel>[:<thread>]" (or a bare platform
// such as "console") served by a connected platform.
func (a *API) checkRoom(room string) string {
	bad := fmt.Sprintf("room %q is not a room: use <platform>:<channel>[:<thread>], e.g. discord:123456", room)
	if len(room) > MaxRoomLength || strings.IndexFunc(room, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return bad
	}
	parts := strings.Split(room, ":")
	if len(parts) > 3 {
		return bad
	}
	for _, p := range parts {
		if p == "" {
			return bad
		}
	}
	for _, r := range parts[0] {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return bad
		}
	}
	if a.o.Runtime != nil {
		if _, ok := a.o.Runtime.Platform(room); !ok {
			return fmt.Sprintf("no %q platform is connected, so room %q would never get a message", parts[0], room)
		}
	}
	return ""
}

// decodeBody reads one JSON object of at most MaxBodyBytes, refusing
// unknown fields and trailing data.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeBodyWithin(w, r, v, MaxBodyBytes)
}

// decodeBodyWithin is decodeBody for a body of at most limit bytes.
func decodeBodyWithin(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	if r.ContentLength > limit {
		return &http.MaxBytesError{Limit: limit}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return errors.New("the body has data after its JSON object")
	}
	return nil
}

// badBody answers a body that could not be decoded: 413 when too large,
// 400 with what is wrong otherwise.
func (a *API) badBody(w http.ResponseWriter, r *http.Request, err error) {
	var (
		mbe *http.MaxBytesError
		se  *json.SyntaxError
		te  *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mbe):
		a.fail(w, r, err)
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, `the body is empty: send a JSON object such as {"goal": "..."}`)
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		writeError(w, http.StatusBadRequest, "the body is not valid JSON: "+err.Error())
	case errors.As(err, &te):
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q must be a %s", te.Field, jsonKind(te.Type.Kind().String())))
	default:
		// Unknown fields ("json: unknown field \"x\"") and trailing data.
		writeError(w, http.StatusBadRequest, "the body is not a valid request: "+strings.TrimPrefix(err.Error(), "json: "))
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "int", "int64":
		return "whole number"
	case "struct", "map":
		return "JSON object"
	}
	return goKind
}

// control answers POST /api/tasks/{number}/pause|resume|cancel:
// the transitions that take nothing but the task.
func (a *API) control(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n, ok := taskNumber(w, r)
		if !ok {
			return
		}
		who, err := requestor(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		// The body carries nothing, but is still bounded.
		if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, MaxBodyBytes)); err != nil {
			a.badBody(w, r, err)
			return
		}
		var t domain.Task
		switch op {
		case "pause":
			t, err = a.o.Tasks.Pause(r.Context(), n, who)
		case "resume":
			t, err = a.o.Tasks.Resume(r.Context(), n, who)
		case "cancel":
			t, err = a.o.Tasks.Cancel(r.Context(), n, who)
		default:
			err = fmt.Errorf("control task #%d: unknown operation %q", n, op)
		}
		if err != nil {
			a.fail(w, r, refused(n, err))
			return
		}
		a.log.Info("task controlled via API", "task", n, "op", op, "actor", who)
		WriteJSON(w, http.StatusOK, taskOf(t))
	}
}
