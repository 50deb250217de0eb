package reducer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/rayflow/rayflow/gen/lifecycle"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// MaxReplayLineBytes bounds one line of a scenario file.
const MaxReplayLineBytes = 1 << 20

// Header is the first line of a scenario file: either a new session
// (SessionIdentity, Deadlines, Capacity and an optional ProtocolVersion) or a
// restored one (Snapshot, optionally LastCompletedToken).
type Header struct {
	Description string
	Session     RunIdentity
	Deadlines   Deadlines
	Capacity    Capacity
	// ProtocolVersion is the header's protocol_version (1 when absent).
	ProtocolVersion int64
	// Snapshot is the raw snapshot object, when the scenario restores one.
	Snapshot           []byte
	LastCompletedToken string
}

// DecodeHeader decodes a scenario header line:
//
//	{"description":"…","protocol_version":1,
//	 "session_identity":{"task_execution_pk":1,"attempt_number":1,"execution_generation":0,"run_id":"r"},
//	 "deadlines":{"outer":100,"admission":10,"submission":20,"result":30,"cancellation":40,"drain":50,"teardown":60},
//	 "capacity":{"session_owners":1,"callers":1,"maximum_in_flight":1,"maximum_buffered_results":1,"owner_concurrency":1,"queue_capacity":0}}
//
// or {"description":"…","snapshot":{…schema 1…},"last_completed_token":"…"}.
// Unknown keys and text that is not one JSON object are errors; ill-typed
// values decode to invalid ones, which Start refuses.
func DecodeHeader(data []byte) (Header, error) {
	v, err := canonical.NoFold.Decode(data)
	if err != nil {
		return Header{}, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Header{}, errors.New("lifecycle: the scenario header must be a JSON object")
	}
	h := Header{ProtocolVersion: lifecycle.ProtocolVersion}
	nan := math.NaN()
	h.Deadlines = Deadlines{nan, nan, nan, nan, nan, nan, nan}
	h.Capacity = Capacity{-1, -1, -1, -1, -1, -1}
	for k, x := range m {
		switch k {
		case "description":
			s, ok := x.(string)
			if !ok {
				return Header{}, errors.New("lifecycle: header description must be a string")
			}
			h.Description = s
		case "protocol_version":
			n, ok := jsonInt(x)
			if !ok {
				n = 0
			}
			h.ProtocolVersion = n
		case "session_identity":
			h.Session = decodeRun(x, false)
		case "deadlines":
			h.Deadlines = decodeDeadlines(x)
		case "capacity":
			h.Capacity = decodeCapacity(x)
		case "snapshot":
			b, err := canonical.NoFold.Marshal(x)
			if err != nil {
				return Header{}, err
			}
			h.Snapshot = b
		case "last_completed_token":
			s, ok := x.(string)
			if !ok {
				return Header{}, errors.New("lifecycle: header last_completed_token must be a string")
			}
			h.LastCompletedToken = s
		default:
			return Header{}, fmt.Errorf("lifecycle: unknown scenario header key %q", k)
		}
	}
	return h, nil
}

func decodeDeadlines(x any) Deadlines {
	nan := math.NaN()
	d := Deadlines{nan, nan, nan, nan, nan, nan, nan}
	m, ok := x.(map[string]any)
	if !ok || len(m) != 7 {
		return d
	}
	for k, v := range m {
		f := nan
		if n, ok := v.(canonical.Number); ok {
			if g, err := strconv.ParseFloat(string(n), 64); err == nil {
				f = g
			}
		}
		switch k {
		case "outer":
			d.Outer = f
		case "admission":
			d.Admission = f
		case "submission":
			d.Submission = f
		case "result":
			d.Result = f
		case "cancellation":
			d.Cancellation = f
		case "drain":
			d.Drain = f
		case "teardown":
			d.Teardown = f
		}
	}
	return d
}

func decodeCapacity(x any) Capacity {
	c := Capacity{-1, -1, -1, -1, -1, -1}
	m, ok := x.(map[string]any)
	if !ok || len(m) != 6 {
		return c
	}
	for k, v := range m {
		n, ok := jsonInt(v)
		if !ok {
			n = -1
		}
		switch k {
		case "session_owners":
			c.SessionOwners = n
		case "callers":
			c.Callers = n
		case "maximum_in_flight":
			c.MaximumInFlight = n
		case "maximum_buffered_results":
			c.MaximumBufferedResults = n
		case "owner_concurrency":
			c.OwnerConcurrency = n
		case "queue_capacity":
			c.QueueCapacity = n
		}
	}
	return c
}

// Start returns the state a header describes. It fails closed with a
// *Rejection: INVALID_IDENTITY for a bad run identity, INVALID_STATE for an
// unsupported protocol version, bad deadlines, any capacity but 1/1/1/1/1/0
// or a snapshot that is not schema 1.
func (h Header) Start() (State, error) {
	if h.Snapshot != nil {
		s, err := DecodeSnapshot(h.Snapshot)
		if err != nil {
			return State{}, reject(lifecycle.RejectionCodeInvalidState, err.Error())
		}
		if h.LastCompletedToken != "" {
			return s.WithLastCompletedToken(h.LastCompletedToken)
		}
		return s, nil
	}
	if h.ProtocolVersion != lifecycle.ProtocolVersion {
		return State{}, reject(lifecycle.RejectionCodeInvalidState, "lifecycle protocol version is unsupported")
	}
	return NewSession(h.Session, h.Deadlines, h.Capacity)
}

// Replay runs a scenario file: the header line, then one event per line
// (blank lines are skipped). It writes one canonical JSON line per event,
// as MarshalOutcome, then the final snapshot as canonical JSON. When the
// header is refused it writes only {"session_rejection":"CODE"} and returns
// the *Rejection. Any other error means the file is malformed; every
// outcome line of the events before the malformed line has been written
// (and flushed) when Replay returns it.
func Replay(r io.Reader, w io.Writer) (err error) {
	bw := bufio.NewWriter(w)
	defer func() {
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
	}()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxReplayLineBytes)
	var s State
	line, started := 0, false
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if !started {
			started = true
			h, err := DecodeHeader(b)
			if err != nil {
				return fmt.Errorf("line %d: %w", line, err)
			}
			if s, err = h.Start(); err != nil {
				var rej *Rejection
				if errors.As(err, &rej) {
					out, _ := canonical.NoFold.Marshal(map[string]any{"session_rejection": string(rej.Code)})
					bw.Write(append(out, '\n'))
				}
				return err
			}
			continue
		}
		ev, err := DecodeEvent(b)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		next, a, rej := s.Apply(ev)
		if rej == nil {
			s = next
		}
		out, err := MarshalOutcome(a, rej)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		bw.Write(append(out, '\n'))
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", line+1, err)
	}
	if !started {
		return errors.New("lifecycle: empty scenario: the first line must be a session header")
	}
	snap, err := s.MarshalSnapshot()
	if err != nil {
		return err
	}
	bw.Write(append(snap, '\n'))
	return nil
}
