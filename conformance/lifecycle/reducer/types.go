package reducer

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rayflow/rayflow/gen/lifecycle"
)

// RunIdentity is the durable run identity that fences every session event:
// (task_execution_pk ≥ 1, attempt_number ≥ 1, execution_generation ≥ 0,
// run_id of 1–128 characters).
type RunIdentity struct {
	TaskExecutionPK     int64
	AttemptNumber       int64
	ExecutionGeneration int64
	RunID               string
}

// InvocationIdentity is a run identity plus the invocation's own id.
type InvocationIdentity struct {
	RunIdentity
	InvocationID string
}

// Invocation returns the invocation identity id within run r.
func (r RunIdentity) Invocation(id string) InvocationIdentity {
	return InvocationIdentity{RunIdentity: r, InvocationID: id}
}

func validIdentifier(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	n := utf8.RuneCountInString(s)
	return n >= 1 && n <= lifecycle.MaxIdentifierRunes
}

// check returns why r is not a valid run identity, or "".
func (r RunIdentity) check() string {
	switch {
	case r.TaskExecutionPK < 1:
		return "task_execution_pk must be a positive integer"
	case r.AttemptNumber < 1:
		return "attempt_number must be a positive integer"
	case r.ExecutionGeneration < 0:
		return "execution_generation must be a non-negative integer"
	case !validIdentifier(r.RunID):
		return "run_id must contain 1 to 128 characters"
	}
	return ""
}

func (i InvocationIdentity) check() string {
	if m := i.RunIdentity.check(); m != "" {
		return m
	}
	if !validIdentifier(i.InvocationID) {
		return "invocation_id must contain 1 to 128 characters"
	}
	return ""
}

// Deadlines are the seven absolute deadlines of a session (finite, ≥ 0, in
// the adapter's clock). Every action deadline is min(Outer, stage).
type Deadlines struct {
	Outer, Admission, Submission, Result, Cancellation, Drain, Teardown float64
}

func validTime(t float64) bool { return !math.IsNaN(t) && !math.IsInf(t, 0) && t >= 0 }

func (d Deadlines) check() string {
	for _, x := range [...]struct {
		name string
		v    float64
	}{{"outer", d.Outer}, {"admission", d.Admission}, {"submission", d.Submission},
		{"result", d.Result}, {"cancellation", d.Cancellation}, {"drain", d.Drain}, {"teardown", d.Teardown}} {
		if !validTime(x.v) {
			return x.name + " deadline must be a finite non-negative timestamp"
		}
	}
	return ""
}

// stage returns the stage deadline of an action kind.
func (d Deadlines) stage(k lifecycle.Action) float64 {
	switch k {
	case lifecycle.ActionAdmit:
		return d.Admission
	case lifecycle.ActionSubmit:
		return d.Submission
	case lifecycle.ActionConsumeOutput:
		return d.Result
	case lifecycle.ActionReleaseCapacity, lifecycle.ActionCancel:
		return d.Cancellation
	case lifecycle.ActionDrainInvocation, lifecycle.ActionDrainSession, lifecycle.ActionCheckHealth:
		return d.Drain
	case lifecycle.ActionTeardown:
		return d.Teardown
	}
	return d.Outer // VALIDATE, PREPARE
}

// ActionDeadline returns min(outer, stage deadline of k).
func (d Deadlines) ActionDeadline(k lifecycle.Action) float64 { return min(d.Outer, d.stage(k)) }

// Capacity is the session's capacity. Protocol v1 accepts exactly
// DefaultCapacity; any other value fails closed.
type Capacity struct {
	SessionOwners, Callers, MaximumInFlight, MaximumBufferedResults, OwnerConcurrency, QueueCapacity int64
}

// DefaultCapacity is the only capacity protocol v1 accepts: one owner, one
// caller, one in-flight invocation, one buffered result, owner concurrency
// one and no queue.
var DefaultCapacity = Capacity{
	SessionOwners: 1, Callers: 1, MaximumInFlight: 1, MaximumBufferedResults: 1, OwnerConcurrency: 1, QueueCapacity: 0,
}

// Action is one bounded request to the adapter. The adapter must answer it
// with a callback event that echoes Token (and Invocation, and OutputIndex
// for CONSUME_OUTPUT).
type Action struct {
	Token    string
	Kind     lifecycle.Action
	Session  RunIdentity
	Deadline float64
	// Invocation is set for invocation-scoped actions (InvocationScoped(Kind)).
	Invocation *InvocationIdentity
	// OutputIndex is set for CONSUME_OUTPUT.
	OutputIndex *int
	// DeclaredOutputs is set for ADMIT.
	DeclaredOutputs *int
}

// Sequence returns the action's sequence number, parsed from its token.
func (a Action) Sequence() int64 {
	seq, _, _ := ParseToken(a.Token)
	return seq
}

// Token returns the action token for sequence seq and kind k.
func Token(seq int64, k lifecycle.Action) string {
	b := make([]byte, 0, len(lifecycle.TokenPrefix)+1+19+1+len(k))
	b = append(b, lifecycle.TokenPrefix...)
	b = append(b, ':')
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, ':')
	b = append(b, k...)
	return string(b)
}

// ParseToken splits a well-formed token cg-lifecycle-v1:<sequence>:<ACTION>
// (sequence 1…2^63-1 without leading zeros, ACTION one of the eleven kinds).
func ParseToken(tok string) (seq int64, kind lifecycle.Action, ok bool) {
	rest, found := strings.CutPrefix(tok, lifecycle.TokenPrefix+":")
	if !found {
		return 0, "", false
	}
	num, k, found := strings.Cut(rest, ":")
	if !found || num == "" || num[0] == '0' || len(num) > 19 {
		return 0, "", false
	}
	for i := 0; i < len(num); i++ {
		if num[i] < '0' || num[i] > '9' {
			return 0, "", false
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || !lifecycle.Action(k).Valid() {
		return 0, "", false
	}
	return n, lifecycle.Action(k), true
}

// Event is one command or callback. Commands carry no token; callbacks
// echo the pending action's token. ProtocolVersion must be
// lifecycle.ProtocolVersion.
type Event struct {
	Kind            EventKind
	ProtocolVersion int64
	Session         RunIdentity
	// Invocation is the five-field identity; required on invocation-scoped
	// events, forbidden on session commands and session-action callbacks.
	Invocation *InvocationIdentity
	// ObservedAt is the adapter's absolute clock reading (finite, ≥ 0,
	// non-decreasing).
	ObservedAt float64
	// ActionToken is the echoed token of a callback; "" means none.
	ActionToken string
	// DeclaredOutputs is ADMISSION_REQUESTED's output cardinality (1–64).
	DeclaredOutputs *int
	// OutputIndex is CONSUMPTION_REQUESTED's slot, echoed by callbacks to
	// CONSUME_OUTPUT.
	OutputIndex *int
}

// Int returns a pointer to n, for the optional Event and Action fields.
func Int(n int) *int { return &n }

// Command returns a command event of kind k for run r at time at.
func Command(k lifecycle.Command, r RunIdentity, at float64) Event {
	return Event{Kind: EventKind(k), ProtocolVersion: lifecycle.ProtocolVersion, Session: r, ObservedAt: at}
}

// Callback returns the callback event of kind k answering action a at time
// at: it echoes a's token, invocation identity and output index.
func Callback(a Action, k lifecycle.Callback, at float64) Event {
	ev := Event{Kind: EventKind(k), ProtocolVersion: lifecycle.ProtocolVersion, Session: a.Session, ObservedAt: at, ActionToken: a.Token, Invocation: a.Invocation}
	if a.OutputIndex != nil {
		ev.OutputIndex = Int(*a.OutputIndex)
	}
	return ev
}

// WithInvocation returns ev carrying invocation identity inv.
func (ev Event) WithInvocation(inv InvocationIdentity) Event {
	ev.Invocation = &inv
	return ev
}
