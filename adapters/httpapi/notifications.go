package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/taskloom/taskloom/domain"
)

// The outbox as operators see it (docs/security.md): notifications not yet
// delivered, and the dead letters that could not be, which a person may
// send back to be tried again.

// listNotifications answers GET /api/notifications (?status=pending|failed,
// ?after=, ?limit=): {"notifications": [...], "next"}, by ID.
func (a *API) listNotifications(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	status := strings.ToLower(strings.TrimSpace(q.Get("status")))
	switch status {
	case "", domain.NotificationPending, domain.NotificationFailed:
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown status %q: use pending or failed (or leave it out for both)", q.Get("status")))
		return
	}
	limit, msg := pageLimit(q.Get("limit"))
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	var after int64
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "after must be a notification id (the next value of the previous page)")
			return
		}
		after = n
	}
	// One more than the page tells whether there is a next one.
	list, err := a.store.ListNotifications(r.Context(), status, after, limit+1)
	if err != nil {
		a.fail(w, r, fmt.Errorf("list notifications: %w", err))
		return
	}
	out := notificationsBody{Notifications: make([]notificationBody, 0, min(len(list), limit))}
	if len(list) > limit {
		list = list[:limit]
		next := list[len(list)-1].ID
		out.Next = &next
	}
	for _, n := range list {
		out.Notifications = append(out.Notifications, notificationOf(n))
	}
	WriteJSON(w, http.StatusOK, out)
}

// retryNotification answers POST /api/notifications/{id}/retry: a dead
// letter goes back to pending, due now, its attempts and error cleared
// (200 with it); one that has not failed is a 409.
func (a *API) retryNotification(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q is not a notification id: use a positive whole number", raw))
		return
	}
	who, err := requestor(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var none struct{}
	if err := decodeOptional(w, r, &none); err != nil {
		a.badBody(w, r, err)
		return
	}
	n, err := a.store.RetryNotification(r.Context(), id, a.clk.Now())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.log.Info("notification retried via API", "notification", id, "room", n.Room, "task", n.TaskNumber, "actor", who)
	WriteJSON(w, http.StatusOK, notificationOf(n))
}
