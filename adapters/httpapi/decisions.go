package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
)

// What people decide about a task (docs/tasks.md, docs/security.md): the answer to its
// question, the tool call it asked approval for, and another run of a
// task that has ended. Each is a POST with a small JSON object; a request
// refused here reaches the task service not at all.

// answerRequest is the body of POST /api/tasks/{number}/answer.
type answerRequest struct {
	Text *string `json:"text"`
}

// retryRequest is the body of POST /api/tasks/{number}/retry.
type retryRequest struct {
	Context string `json:"context"`
}

// approveRequest is the body of POST /api/tasks/{number}/approve: call,
// when set, is the id of the approval request decided on (the task's
// approval.id when it was shown); without it the call pending now is.
type approveRequest struct {
	Call string `json:"call"`
}

// denyRequest is the body of POST /api/tasks/{number}/deny.
type denyRequest struct {
	Reason string `json:"reason"`
	Call   string `json:"call"`
}

// decisionBody answers an approval or a denial: the task, and the call
// that was decided on.
type decisionBody struct {
	taskBody
	Decided approvalBody `json:"decided"`
}

// decodeOptional is decodeBody for a body whose fields are all optional:
// an empty body is an empty object.
func decodeOptional(w http.ResponseWriter, r *http.Request, v any) error {
	if err := decodeBody(w, r, v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// personText trims what a person sent as field and says, as a non-empty
// string, what is wrong with it.
func personText(field, s string) (string, string) {
	s = strings.TrimSpace(s)
	if n := utf8.RuneCountInString(s); n > MaxTextLength {
		return "", fmt.Sprintf("the %s is %d characters; the limit is %d", field, n, MaxTextLength)
	}
	return s, ""
}

// taskRequest reads what every request about one task carries: its
// number, who asks, and a JSON body into v. It answers a bad one itself
// and then reports false.
func (a *API) taskRequest(w http.ResponseWriter, r *http.Request, v any) (int64, string, bool) {
	n, ok := taskNumber(w, r)
	if !ok {
		return 0, "", false
	}
	who, err := requestor(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return 0, "", false
	}
	if err := decodeOptional(w, r, v); err != nil {
		a.badBody(w, r, err)
		return 0, "", false
	}
	return n, who, true
}

// answerTask answers POST /api/tasks/{number}/answer {"text"}: the task
// waiting on an answer goes on with it (200); a task waiting on nothing,
// or on something else, is a 409.
func (a *API) answerTask(w http.ResponseWriter, r *http.Request) {
	var req answerRequest
	n, who, ok := a.taskRequest(w, r, &req)
	if !ok {
		return
	}
	if req.Text == nil {
		writeError(w, http.StatusBadRequest, `the body needs a "text": the answer to the task's question`)
		return
	}
	text, msg := personText("answer", *req.Text)
	if msg == "" && text == "" {
		msg = "the answer is empty: say what the task asked for"
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	t, err := a.o.Tasks.Answer(r.Context(), n, who, text)
	if err != nil {
		a.fail(w, r, refused(n, err))
		return
	}
	a.log.Info("task answered via API", "task", n, "actor", who)
	WriteJSON(w, http.StatusOK, taskOf(t))
}

// approveTask answers POST /api/tasks/{number}/approve {"call"?}: the
// tool call the task asked for runs at its next iteration (200, with the
// call decided on); a call no longer pending, or a task that waits for no
// approval, is a 409 and changes nothing.
func (a *API) approveTask(w http.ResponseWriter, r *http.Request) {
	var req approveRequest
	n, who, ok := a.taskRequest(w, r, &req)
	if !ok {
		return
	}
	a.decide(w, r, n, who, "approve", req.Call, "")
}

// denyTask answers POST /api/tasks/{number}/deny {"reason"?, "call"?}:
// the tool call the task asked for does not run, and its step fails with
// the reason.
func (a *API) denyTask(w http.ResponseWriter, r *http.Request) {
	var req denyRequest
	n, who, ok := a.taskRequest(w, r, &req)
	if !ok {
		return
	}
	reason, msg := personText("reason", req.Reason)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	a.decide(w, r, n, who, "deny", req.Call, reason)
}

// decide approves or denies the call of task n named call, or the one
// pending as the task is read when call is "": either way the decision is
// bound to one call, the one the answer names.
func (a *API) decide(w http.ResponseWriter, r *http.Request, n int64, who, op, call, reason string) {
	if utf8.RuneCountInString(call) > maxCallID {
		writeError(w, http.StatusBadRequest, fmt.Sprintf(`"call" is an approval request's id, at most %d characters`, maxCallID))
		return
	}
	before, err := a.store.GetTask(r.Context(), n)
	if err != nil {
		a.fail(w, r, notFound(n, err))
		return
	}
	if call == "" {
		call = domain.ApprovalID(before)
	}
	var t domain.Task
	if op == "approve" {
		t, err = a.o.Tasks.Approve(r.Context(), n, who, call)
	} else {
		t, err = a.o.Tasks.Deny(r.Context(), n, who, call, reason)
	}
	if err != nil {
		a.fail(w, r, refused(n, err))
		return
	}
	a.log.Info("task's tool call decided via API", "task", n, "op", op, "call", call, "actor", who)
	WriteJSON(w, http.StatusOK, decisionBody{taskBody: taskOf(t), Decided: approvalBody{
		ID: call, Action: before.ApprovalAction, Params: jsonOf(before.ApprovalParams), Granted: op == "approve", Role: before.ApprovalRole}})
}

// maxCallID bounds the "call" of a decision; an id is 16 characters.
const maxCallID = 64

// retryTask answers POST /api/tasks/{number}/retry {"context"?}: 201 with
// a new task continuing the ended one (its goal, its files, a summary of
// its run and the context in the first prompt). The new task is the
// requestor's, in the old one's workspace, and in its room when a
// connected platform still serves it. A task that has not ended is a 409,
// a requestor past their limit a 429.
func (a *API) retryTask(w http.ResponseWriter, r *http.Request) {
	var req retryRequest
	n, who, ok := a.taskRequest(w, r, &req)
	if !ok {
		return
	}
	extra, msg := personText("context", req.Context)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	old, err := a.store.GetTask(r.Context(), n)
	if err != nil {
		a.fail(w, r, notFound(n, err))
		return
	}
	in := domain.NewTask{
		RequestorID: who, Actor: who, Platform: "api", WorkspaceID: old.WorkspaceID,
		Context: extra, Now: a.clk.Now(),
	}
	if in.WorkspaceID == "" {
		in.WorkspaceID = "local"
	}
	if old.RoomID != "" && a.serves(old.RoomID) {
		in.RoomID, in.Platform = old.RoomID, domain.RoomPlatform(old.RoomID)
	}
	t, err := a.o.Tasks.Retry(r.Context(), n, in)
	if err != nil {
		a.fail(w, r, refused(n, err))
		return
	}
	a.log.Info("task retried via API", "task", n, "new_task", t.Number, "requestor", who)
	w.Header().Set("Location", fmt.Sprintf("/api/tasks/%d", t.Number))
	WriteJSON(w, http.StatusCreated, taskOf(t))
}

// serves reports whether a connected platform serves room (or whether the
// API cannot tell, having no runtime).
func (a *API) serves(room string) bool {
	if a.o.Runtime == nil {
		return true
	}
	_, ok := a.o.Runtime.Platform(room)
	return ok
}
