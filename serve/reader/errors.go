package reader

import (
	"context"
	"errors"
	"fmt"

	"github.com/rayflow/rayflow/gen/read"
)

// Error is a read failure with its contract code (docs/contracts.md#reads-cursors-and-error-codes).
type Error struct {
	Code    read.ErrorCode
	Message string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Is matches another *Error by code, so errors.Is(err, &Error{Code: c}) works.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == e.Code
}

func errorf(code read.ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the read error code of err, or "" when it has none.
func CodeOf(err error) read.ErrorCode {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Action names what a principal wants to do with a task.
type Action string

// Actions the read services and rayflow serve authorize.
const (
	ActionReadProgress Action = "progress.read"
	ActionReadTask     Action = "task.read"
	ActionCancel       Action = "task.cancel"
	ActionRetry        Action = "task.retry"
	// ActionEnqueue creates a task of a flow: the Task has no ID, its Flow
	// is the flow to enqueue and Exists is true (the flow is known).
	ActionEnqueue Action = "task.enqueue"
	// ActionReadQueue reads a queue's admission limits and counts, and
	// ActionSetQueueLimits sets its limits. A queue holds the tasks of
	// every flow: the Task has no ID, an empty Flow (every flow) and
	// Exists true, which rayflow serve's token allowlist grants only to
	// a principal that may see every flow ("*").
	ActionReadQueue      Action = "queue.read"
	ActionSetQueueLimits Action = "queue.limits"
)

// Task is what an Authorizer learns about the task a request names.
// Exists is false (and Flow empty) when no task has that id: an
// authorizer must decide without it, so a denied principal cannot tell
// whether the task exists.
type Task struct {
	ID     string
	Flow   string
	Exists bool
}

// Authorizer decides whether principal may perform action on task. It
// returns nil to allow; any error denies (reported as ACCESS_DENIED).
type Authorizer interface {
	Authorize(ctx context.Context, principal string, task Task, action Action) error
}

// ErrDenied is what authorizers return to deny.
var ErrDenied = errors.New("access denied")
