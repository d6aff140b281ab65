package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/taskloom/taskloom/domain"
)

// taskFiles answers GET /api/tasks/{number}/files: the task's files
// (docs/deploy.md), without their bytes.
func (a *API) taskFiles(w http.ResponseWriter, r *http.Request) {
	n, ok := taskNumber(w, r)
	if !ok {
		return
	}
	if _, err := a.store.GetTask(r.Context(), n); err != nil {
		a.fail(w, r, notFound(n, err))
		return
	}
	files, err := a.store.TaskFiles(r.Context(), n)
	if err != nil {
		a.fail(w, r, fmt.Errorf("files of task #%d: %w", n, err))
		return
	}
	if files == nil {
		files = []domain.TaskFile{}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"files": files})
}

// taskFile answers GET /api/tasks/{number}/files/{path...}: one file's
// bytes, never interpreted by the browser (a task writes what a model
// chose).
func (a *API) taskFile(w http.ResponseWriter, r *http.Request) {
	n, ok := taskNumber(w, r)
	if !ok {
		return
	}
	if _, err := a.store.GetTask(r.Context(), n); err != nil {
		a.fail(w, r, notFound(n, err))
		return
	}
	path := r.PathValue("path")
	f, data, err := a.store.ReadTaskFile(r.Context(), n, path)
	switch {
	case errors.Is(err, domain.ErrNoFile):
		writeError(w, http.StatusNotFound, fmt.Sprintf("task #%d has no file %q", n, path))
		return
	case errors.Is(err, domain.ErrInvalid):
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q is not a file path: use a relative path such as notes/plan.md", path))
		return
	case err != nil:
		a.fail(w, r, fmt.Errorf("file %q of task #%d: %w", path, n, err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("ETag", `"`+f.SHA256+`"`)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}
