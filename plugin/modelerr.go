package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// ModelErrorClass says what a failed model call means for the work that
// needed it. A model failure is never a task failure: the class only
// decides how long the work waits and who is told.
type ModelErrorClass int

const (
	// ModelTransient is a failure that may pass by itself: the connection
	// failed or timed out, or the server was busy or broken (HTTP 408,
	// 409, 429, 5xx). The work is tried again later.
	ModelTransient ModelErrorClass = iota + 1
	// ModelPermanent is a request the server refused and will refuse
	// again until someone changes something: a wrong key (401), no access
	// (403), no such model (404), a request it does not accept (400 and
	// the other 4xx). The work is put on hold.
	ModelPermanent
	// ModelCanceled is a call the caller gave up on (its context was
	// canceled, at shutdown for instance). It says nothing about the
	// model; errors.Is(err, context.Canceled) holds as well.
	ModelCanceled
)

// String names the class as logs show it.
func (c ModelErrorClass) String() string {
	switch c {
	case ModelTransient:
		return "transient"
	case ModelPermanent:
		return "permanent"
	case ModelCanceled:
		return "canceled"
	}
	return fmt.Sprintf("ModelErrorClass(%d)", int(c))
}

// ModelError is a failed model call with its class. Model adapters return
// it so that callers decide with errors.As (or ClassifyModelError) and
// never look at HTTP statuses or client libraries themselves.
type ModelError struct {
	Class ModelErrorClass
	// Status is the HTTP status of the last answer, 0 when none came.
	Status int
	// Err is the failure, with the adapter's context.
	Err error
}

// NewModelError wraps err, the failure of a model call whose last answer
// had the HTTP status given (0 when no answer came), with its class: the
// one place where failures are sorted.
//
// In order: the caller's cancellation is ModelCanceled; a timeout is
// ModelTransient; a status decides as ClassifyStatus says; with no status,
// a network error (refused, reset, DNS, EOF) is ModelTransient, and so is
// anything else: an error that says nothing of its kind delays the work,
// whereas taking it as permanent would put every task on hold on a guess.
func NewModelError(status int, err error) *ModelError {
	return &ModelError{Class: classify(status, err), Status: status, Err: err}
}

// ClassifyModelError returns the class of a failed model call: that of the
// *ModelError in err's chain, or else the class NewModelError(0, err)
// would give. It returns 0 for a nil err.
func ClassifyModelError(err error) ModelErrorClass {
	if err == nil {
		return 0
	}
	var me *ModelError
	if errors.As(err, &me) && me.Class != 0 {
		return me.Class
	}
	if me != nil {
		return classify(me.Status, me.Err)
	}
	return classify(0, err)
}

// ClassifyStatus returns the class of a model call answered with an HTTP
// error status: 408, 409, 429 and 5xx are transient, every other 4xx
// permanent. A status that is not an error (a 200 whose body is unusable)
// is transient.
func ClassifyStatus(status int) ModelErrorClass {
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusConflict,
		status == http.StatusTooManyRequests, status >= 500:
		return ModelTransient
	case status >= 400:
		return ModelPermanent
	}
	return ModelTransient
}

func classify(status int, err error) ModelErrorClass {
	switch {
	case errors.Is(err, context.Canceled):
		return ModelCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return ModelTransient
	case status != 0:
		return ClassifyStatus(status)
	}
	// No status and no context error: a network error (*url.Error,
	// *net.OpError, *net.DNSError, io.EOF from a dropped connection) —
	// and whatever else a model plugin returns.
	return ModelTransient
}

// Error is the wrapped error's message: the adapter's error already says
// which call failed and how.
func (e *ModelError) Error() string {
	if e.Err == nil {
		if e.Status != 0 {
			return fmt.Sprintf("model call failed (%s): status %d", e.Class, e.Status)
		}
		return fmt.Sprintf("model call failed (%s)", e.Class)
	}
	return e.Err.Error()
}

// Unwrap returns the failure.
func (e *ModelError) Unwrap() error { return e.Err }
