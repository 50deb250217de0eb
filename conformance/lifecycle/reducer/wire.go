package reducer

import (
	"fmt"
	"math"
	"strconv"

	"github.com/rayflow/rayflow/sdk/canonical"
)

// The JSON form of events, actions and outcomes used by scenario files and
// `rayflow lifecycle replay` (see Replay).

// invalidToken stands for an action_token of the wrong JSON type: it
// matches no action.
const invalidToken = "\u0000invalid"

// DecodeEvent decodes one event object:
//
//	{"kind":"ADMISSION_REQUESTED","protocol_version":1,
//	 "session_identity":{"task_execution_pk":1,"attempt_number":1,"execution_generation":0,"run_id":"r"},
//	 "invocation_identity":{…,"invocation_id":"i1"},"observed_at":3.5,
//	 "action_token":null,"declared_outputs":2,"output_index":null}
//
// Only text that is not one JSON object is an error. Everything else
// decodes to an Event, so that the reducer, not the decoder, rejects it
// with the protocol's code: an unknown key or kind, or a protocol_version
// that is missing or not 1, gives INVALID_EVENT; a missing or ill-typed
// identity field INVALID_IDENTITY; a missing or non-numeric observed_at
// INVALID_CLOCK; an ill-typed declared_outputs or output_index counts as
// present and invalid. Identity objects may carry "schema_version":1.
// Absent and null optional fields are the same.
func DecodeEvent(data []byte) (Event, error) {
	v, err := canonical.NoFold.Decode(data)
	if err != nil {
		return Event{}, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Event{}, fmt.Errorf("lifecycle: an event must be a JSON object")
	}
	ev := Event{ObservedAt: math.NaN()}
	bad := false
	for k, x := range m {
		switch k {
		case "kind":
			s, ok := x.(string)
			bad = bad || !ok
			ev.Kind = EventKind(s)
		case "protocol_version":
			n, ok := jsonInt(x)
			if ok {
				ev.ProtocolVersion = n
			} else {
				bad = true
			}
		case "session_identity":
			ev.Session = decodeRun(x, false)
		case "invocation_identity":
			if x != nil {
				inv := decodeInvocation(x)
				ev.Invocation = &inv
			}
		case "observed_at":
			if n, ok := x.(canonical.Number); ok {
				if f, err := strconv.ParseFloat(string(n), 64); err == nil {
					ev.ObservedAt = f
				}
			}
		case "action_token":
			switch t := x.(type) {
			case nil:
			case string:
				ev.ActionToken = t
			default:
				ev.ActionToken = invalidToken
			}
		case "declared_outputs":
			ev.DeclaredOutputs = optionalInt(x)
		case "output_index":
			ev.OutputIndex = optionalInt(x)
		default:
			bad = true
		}
	}
	if bad {
		ev.Kind = ""
	}
	return ev, nil
}

func jsonInt(x any) (int64, bool) {
	n, ok := x.(canonical.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

func optionalInt(x any) *int {
	if x == nil {
		return nil
	}
	i, ok := jsonInt(x)
	if !ok || i < 0 || i > math.MaxInt32 {
		return Int(-1)
	}
	return Int(int(i))
}

// decodeRun reads a run identity; any defect yields an invalid identity.
func decodeRun(x any, invocation bool) RunIdentity {
	r, _ := decodeIdentity(x, invocation)
	return r
}

func decodeInvocation(x any) InvocationIdentity {
	r, id := decodeIdentity(x, true)
	return InvocationIdentity{RunIdentity: r, InvocationID: id}
}

func decodeIdentity(x any, invocation bool) (RunIdentity, string) {
	invalid := RunIdentity{}
	m, ok := x.(map[string]any)
	if !ok {
		return invalid, ""
	}
	var r RunIdentity
	var id string
	seen := 0
	for k, v := range m {
		var ok bool
		switch k {
		case "task_execution_pk":
			r.TaskExecutionPK, ok = jsonInt(v)
		case "attempt_number":
			r.AttemptNumber, ok = jsonInt(v)
		case "execution_generation":
			r.ExecutionGeneration, ok = jsonInt(v)
		case "run_id":
			r.RunID, ok = v.(string)
		case "invocation_id":
			id, ok = v.(string)
			ok = ok && invocation
		case "schema_version":
			n, isInt := jsonInt(v)
			ok = isInt && n == 1
			seen--
		}
		if !ok {
			return invalid, ""
		}
		seen++
	}
	want := 4
	if invocation {
		want = 5
	}
	if seen != want {
		return invalid, ""
	}
	return r, id
}

func encodeRun(r RunIdentity) map[string]any {
	return map[string]any{
		"task_execution_pk": r.TaskExecutionPK, "attempt_number": r.AttemptNumber,
		"execution_generation": r.ExecutionGeneration, "run_id": r.RunID,
	}
}

// MarshalEvent returns ev as one canonical JSON object in the form
// DecodeEvent reads; optional fields appear only when set.
func MarshalEvent(ev Event) ([]byte, error) {
	m := map[string]any{
		"kind":             string(ev.Kind),
		"protocol_version": ev.ProtocolVersion,
		"session_identity": encodeRun(ev.Session),
		"observed_at":      ev.ObservedAt,
	}
	if ev.Invocation != nil {
		im := encodeRun(ev.Invocation.RunIdentity)
		im["invocation_id"] = ev.Invocation.InvocationID
		m["invocation_identity"] = im
	}
	if ev.ActionToken != "" {
		m["action_token"] = ev.ActionToken
	}
	if ev.DeclaredOutputs != nil {
		m["declared_outputs"] = *ev.DeclaredOutputs
	}
	if ev.OutputIndex != nil {
		m["output_index"] = *ev.OutputIndex
	}
	return canonical.NoFold.Marshal(m)
}

// MarshalOutcome returns the canonical JSON outcome line of one event:
// {"rejection":"CODE"} when rejected, else {"action":null} or
// {"action":{"deadline":…,"declared_outputs":…,"invocation_id":…,"kind":…,"output_index":…,"token":…}}:
// the pending_action form of the snapshot plus the invocation id the
// action is scoped to (null for session-scoped actions), so the adapter
// that performs it needs nothing but this line.
func MarshalOutcome(a *Action, rej *Rejection) ([]byte, error) {
	if rej != nil {
		return canonical.NoFold.Marshal(map[string]any{"rejection": string(rej.Code)})
	}
	if a == nil {
		return canonical.NoFold.Marshal(map[string]any{"action": nil})
	}
	pa := map[string]any{"token": a.Token, "kind": string(a.Kind), "deadline": a.Deadline,
		"output_index": nil, "declared_outputs": nil, "invocation_id": nil}
	if a.OutputIndex != nil {
		pa["output_index"] = int64(*a.OutputIndex)
	}
	if a.DeclaredOutputs != nil {
		pa["declared_outputs"] = int64(*a.DeclaredOutputs)
	}
	if a.Invocation != nil {
		pa["invocation_id"] = a.Invocation.InvocationID
	}
	return canonical.NoFold.Marshal(map[string]any{"action": pa})
}
