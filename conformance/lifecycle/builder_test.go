package lifecycle_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/conformance/lifecycle/reducer"
	"github.com/rayflow/rayflow/gen/lifecycle"
	"github.com/rayflow/rayflow/sdk/canonical"
)

var update = flag.Bool("update", false, "rewrite scenarios/*.jsonl and *.out from the scenario definitions")

var (
	runID = reducer.RunIdentity{TaskExecutionPK: 42, AttemptNumber: 1, ExecutionGeneration: 0, RunID: "rayflow:42"}
	// Default deadlines: every stage ends before the outer deadline.
	stdDeadlines = reducer.Deadlines{Outer: 100, Admission: 10, Submission: 20, Result: 30, Cancellation: 40, Drain: 50, Teardown: 60}
)

func identityJSON(r reducer.RunIdentity) map[string]any {
	return map[string]any{
		"task_execution_pk": r.TaskExecutionPK, "attempt_number": r.AttemptNumber,
		"execution_generation": r.ExecutionGeneration, "run_id": r.RunID,
	}
}

func deadlinesJSON(d reducer.Deadlines) map[string]any {
	return map[string]any{"outer": d.Outer, "admission": d.Admission, "submission": d.Submission,
		"result": d.Result, "cancellation": d.Cancellation, "drain": d.Drain, "teardown": d.Teardown}
}

var capacityJSON = map[string]any{"session_owners": 1, "callers": 1, "maximum_in_flight": 1,
	"maximum_buffered_results": 1, "owner_concurrency": 1, "queue_capacity": 0}

// sb builds one scenario: it applies each event to the reducer as it is
// added, checks the hand-written expectation, and records the input line.
type sb struct {
	t        *testing.T
	name     string
	header   []byte
	s        reducer.State
	refused  bool
	now      float64
	inv      reducer.InvocationIdentity
	last     *reducer.Action // last issued action
	lines    [][]byte
	steps    int
	category string
}

func newScenario(t *testing.T, cat, name, desc string, d reducer.Deadlines) *sb {
	h := map[string]any{"description": desc, "protocol_version": 1, "session_identity": identityJSON(runID),
		"deadlines": deadlinesJSON(d), "capacity": capacityJSON}
	return fromHeader(t, cat, name, h)
}

func fromHeader(t *testing.T, cat, name string, h map[string]any) *sb {
	t.Helper()
	b := &sb{t: t, name: name, now: 1, category: cat}
	var err error
	if b.header, err = canonical.NoFold.Marshal(h); err != nil {
		t.Fatal(err)
	}
	hd, err := reducer.DecodeHeader(b.header)
	if err != nil {
		t.Fatalf("%s: header: %v", name, err)
	}
	b.s, err = hd.Start()
	b.refused = err != nil
	return b
}

// fromSnapshot starts a scenario from base's snapshot after edit.
func fromSnapshot(t *testing.T, cat, name, desc string, base reducer.State, edit func(m map[string]any)) *sb {
	t.Helper()
	raw, err := base.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(m)
	}
	b := fromHeader(t, cat, name, map[string]any{"description": desc, "snapshot": toCanonical(m)})
	if inv, ok := base.Invocation(); ok {
		b.inv = inv
	}
	b.last = base.Pending()
	if o, ok := base.LastObservedAt(); ok {
		b.now = o
	}
	return b
}

// toCanonical converts encoding/json values (json.Number) to canonical's.
func toCanonical(v any) any {
	switch x := v.(type) {
	case json.Number:
		return canonical.Number(x)
	case map[string]any:
		for k, e := range x {
			x[k] = toCanonical(e)
		}
	case []any:
		for i, e := range x {
			x[i] = toCanonical(e)
		}
	}
	return v
}

type step struct {
	b  *sb
	ev reducer.Event
	// raw overrides the encoded event line.
	raw map[string]any
}

func (b *sb) at(t float64) *sb { b.now = t; return b }

// cmd starts a command event with the run identity and no invocation.
func (b *sb) cmd(k lifecycle.Command) *step {
	return &step{b: b, ev: reducer.Command(k, runID, b.now)}
}

// stray starts callback k built as a command is: with the run identity, no
// invocation and no token, answering no issued action (tok adds one).
func (b *sb) stray(k lifecycle.Callback) *step {
	return &step{b: b, ev: reducer.Event{Kind: reducer.EventKind(k), ProtocolVersion: lifecycle.ProtocolVersion, Session: runID, ObservedAt: b.now}}
}

// cb starts a callback answering the last issued action.
func (b *sb) cb(k lifecycle.Callback) *step {
	if b.last == nil {
		b.t.Fatalf("%s: callback %s with no action issued", b.name, k)
	}
	return &step{b: b, ev: reducer.Callback(*b.last, k, b.now)}
}

func (st *step) at(t float64) *step { st.b.now = t; st.ev.ObservedAt = t; return st }

// inv attaches the current invocation identity.
func (st *step) inv() *step { st.ev = st.ev.WithInvocation(st.b.inv); return st }

// invID attaches invocation identity id.
func (st *step) invID(id string) *step { st.ev = st.ev.WithInvocation(runID.Invocation(id)); return st }

func (st *step) noInv() *step                     { st.ev.Invocation = nil; return st }
func (st *step) outs(n int) *step                 { st.ev.DeclaredOutputs = reducer.Int(n); return st }
func (st *step) idx(i int) *step                  { st.ev.OutputIndex = reducer.Int(i); return st }
func (st *step) noIdx() *step                     { st.ev.OutputIndex = nil; return st }
func (st *step) tok(tok string) *step             { st.ev.ActionToken = tok; return st }
func (st *step) mod(f func(*reducer.Event)) *step { f(&st.ev); return st }

// rawEdit edits the JSON line of the event before it is decoded.
func (st *step) rawEdit(f func(m map[string]any)) *step {
	line, err := reducer.MarshalEvent(st.ev)
	if err != nil {
		st.b.t.Fatal(err)
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		st.b.t.Fatal(err)
	}
	f(m)
	st.raw = toCanonical(m).(map[string]any)
	return st
}

// want applies the event and checks the outcome: an action kind that must
// be issued, "-" for accepted with no action, or a rejection code.
func (st *step) want(w string) *sb {
	b := st.b
	b.t.Helper()
	b.steps++
	var line []byte
	var err error
	if st.raw != nil {
		line, err = canonical.NoFold.Marshal(st.raw)
	} else {
		line, err = reducer.MarshalEvent(st.ev)
	}
	if err != nil {
		b.t.Fatalf("%s: step %d: %v", b.name, b.steps, err)
	}
	ev, err := reducer.DecodeEvent(line)
	if err != nil {
		b.t.Fatalf("%s: step %d: %v", b.name, b.steps, err)
	}
	b.lines = append(b.lines, line)
	next, a, rej := b.s.Apply(ev)
	got := "-"
	switch {
	case rej != nil:
		got = string(rej.Code)
	case a != nil:
		got = string(a.Kind)
	}
	if got != w {
		msg := ""
		if rej != nil {
			msg = rej.Message
		}
		b.t.Errorf("%s: step %d (%s): got %s, want %s %s", b.name, b.steps, ev.Kind, got, w, msg)
	}
	if rej == nil {
		b.s = next
		if a != nil {
			b.last = a
		}
		if ev.Kind == reducer.EventKind(lifecycle.CommandAdmissionRequested) && ev.Invocation != nil {
			b.inv = *ev.Invocation
		}
	}
	return b
}

// check asserts facts about the current state.
func (b *sb) check(f func(s reducer.State) string) *sb {
	b.t.Helper()
	if m := f(b.s); m != "" {
		b.t.Errorf("%s: after step %d: %s", b.name, b.steps, m)
	}
	return b
}

// expect checks selected snapshot fields by their JSON names.
func (b *sb) expect(kv ...string) *sb {
	b.t.Helper()
	raw, err := b.s.MarshalSnapshot()
	if err != nil {
		b.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		b.t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		got := fmt.Sprint(m[kv[i]])
		if kv[i] == "outputs" {
			var states []string
			for _, o := range m["outputs"].([]any) {
				states = append(states, o.(map[string]any)["state"].(string))
			}
			got = strings.Join(states, ",")
		}
		if kv[i] == "cleanup_diagnostics" {
			var ds []string
			for _, d := range m["cleanup_diagnostics"].([]any) {
				ds = append(ds, d.(string))
			}
			got = strings.Join(ds, ",")
		}
		if got != kv[i+1] {
			b.t.Errorf("%s: after step %d: %s = %s, want %s", b.name, b.steps, kv[i], got, kv[i+1])
		}
	}
	return b
}

// scenarioSet collects built scenarios and writes or verifies their files.
type scenarioSet struct {
	t    *testing.T
	all  []*sb
	seen map[string]bool
}

func (ss *scenarioSet) add(b *sb) {
	ss.t.Helper()
	if ss.seen[b.name] {
		ss.t.Fatalf("duplicate scenario name %s", b.name)
	}
	ss.seen[b.name] = true
	ss.all = append(ss.all, b)
}

func (b *sb) files(t *testing.T) (in, out []byte) {
	var ib bytes.Buffer
	ib.Write(b.header)
	ib.WriteByte('\n')
	for _, l := range b.lines {
		ib.Write(l)
		ib.WriteByte('\n')
	}
	var ob bytes.Buffer
	if err := reducer.Replay(bytes.NewReader(ib.Bytes()), &ob); err != nil && !b.refused {
		t.Fatalf("%s: replay: %v", b.name, err)
	}
	return ib.Bytes(), ob.Bytes()
}

func (ss *scenarioSet) finish() {
	t := ss.t
	for _, b := range ss.all {
		in, out := b.files(t)
		base := filepath.Join("scenarios", b.name)
		if *update {
			if err := os.WriteFile(base+".jsonl", in, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(base+".out", out, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		gotIn, err := os.ReadFile(base + ".jsonl")
		if err != nil || !bytes.Equal(gotIn, in) {
			t.Errorf("%s.jsonl differs from its definition (run go test -update): %v", base, err)
		}
		gotOut, err := os.ReadFile(base + ".out")
		if err != nil || !bytes.Equal(gotOut, out) {
			t.Errorf("%s.out differs from the reducer's output (run go test -update): %v", base, err)
		}
	}
	if *update {
		files, _ := filepath.Glob(filepath.Join("scenarios", "*.jsonl"))
		for _, f := range files {
			if !ss.seen[strings.TrimSuffix(filepath.Base(f), ".jsonl")] {
				os.Remove(f)
				os.Remove(strings.TrimSuffix(f, ".jsonl") + ".out")
			}
		}
	}
}
