package lifecycle_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/conformance/lifecycle/reducer"
	"github.com/rayflow/rayflow/gen/lifecycle"
)

func scenarios(t *testing.T) []Scenario {
	t.Helper()
	all, err := Scenarios()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 80 {
		t.Fatalf("%d scenarios, want at least 80", len(all))
	}
	return all
}

func TestScenariosNative(t *testing.T) {
	t.Parallel()
	for _, s := range scenarios(t) {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			got, exit, err := Native(s)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Check(got, exit); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestScenariosCLI(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the rayflow binary")
	}
	bin := filepath.Join(t.TempDir(), "rayflow")
	build := exec.Command("go", "build", "-o", bin, "github.com/rayflow/rayflow/tools/rayflow")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	for _, s := range scenarios(t) {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(dir, s.Name+".jsonl")
			if err := os.WriteFile(file, s.Input, 0o644); err != nil {
				t.Fatal(err)
			}
			got, exit, err := Command(context.Background(), []string{bin}, file)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Check(got, exit); err != nil {
				t.Error(err)
			}
		})
	}
}

// trajectory replays a scenario in process and returns every state, the
// events and the outcome line of each event.
func trajectory(t *testing.T, s Scenario) (states []reducer.State, events []reducer.Event, outcomes []string, ok bool) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(s.Input))
	sc.Buffer(nil, reducer.MaxReplayLineBytes)
	sc.Scan()
	h, err := reducer.DecodeHeader(sc.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.Start()
	if err != nil {
		return nil, nil, nil, false
	}
	states = append(states, st)
	for sc.Scan() {
		ev, err := reducer.DecodeEvent(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		next, a, rej := st.Apply(ev)
		if rej == nil {
			st = next
		}
		line, err := reducer.MarshalOutcome(a, rej)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
		outcomes = append(outcomes, string(line))
		states = append(states, st)
	}
	return states, events, outcomes, true
}

// TestRestoreAtEveryCut checks that stopping after any event of any
// scenario, snapshotting, restoring and continuing gives the same outcomes
// and final snapshot as never having stopped. With the last completed
// token persisted beside the snapshot the equality is exact; from the
// snapshot alone, the only allowed difference is DUPLICATE_ACTION versus
// STALE_ACTION_TOKEN for a callback naming an action that was superseded
// (not completed) before the cut.
func TestRestoreAtEveryCut(t *testing.T) {
	t.Parallel()
	swaps, cuts := 0, 0
	for _, s := range scenarios(t) {
		states, events, want, ok := trajectory(t, s)
		if !ok {
			continue
		}
		wantFinal, err := states[len(states)-1].MarshalSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		for cut := range states {
			raw, err := states[cut].MarshalSnapshot()
			if err != nil {
				t.Fatalf("%s cut %d: %v", s.Name, cut, err)
			}
			for _, withToken := range []bool{true, false} {
				cuts++
				st, err := reducer.DecodeSnapshot(raw)
				if err != nil {
					t.Fatalf("%s cut %d: restore: %v", s.Name, cut, err)
				}
				if tok := states[cut].LastCompletedToken(); withToken && tok != "" {
					if st, err = st.WithLastCompletedToken(tok); err != nil {
						t.Fatalf("%s cut %d: %v", s.Name, cut, err)
					}
				}
				for i, ev := range events[cut:] {
					next, a, rej := st.Apply(ev)
					if rej == nil {
						st = next
					}
					line, _ := reducer.MarshalOutcome(a, rej)
					if got, w := string(line), want[cut+i]; got != w {
						dupStale := strings.Contains(got+w, "DUPLICATE_ACTION") && strings.Contains(got+w, "STALE_ACTION_TOKEN")
						if withToken || !dupStale {
							t.Errorf("%s: cut after %d events (token kept %v): event %d: got %s, want %s", s.Name, cut, withToken, cut+i+1, got, w)
						}
						swaps++
					}
				}
				got, err := st.MarshalSnapshot()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, wantFinal) {
					t.Errorf("%s: cut after %d events (token kept %v): final snapshot differs:\n got: %s\nwant: %s", s.Name, cut, withToken, got, wantFinal)
				}
			}
		}
	}
	t.Logf("%d restores; %d DUPLICATE/STALE reclassifications without the persisted token", cuts, swaps)
}

func TestScenarioCoverage(t *testing.T) {
	t.Parallel()
	codes := map[string]bool{}
	kinds := map[string]bool{}
	for _, s := range scenarios(t) {
		for _, l := range strings.Split(string(s.Want), "\n") {
			for _, c := range lifecycle.RejectionCodeValues {
				if strings.Contains(l, `"`+string(c)+`"`) && (strings.HasPrefix(l, `{"rejection"`) || strings.HasPrefix(l, `{"session_rejection"`)) {
					codes[string(c)] = true
				}
			}
		}
		for _, l := range strings.Split(string(s.Input), "\n") {
			if ev, err := reducer.DecodeEvent([]byte(l)); err == nil {
				kinds[string(ev.Kind)] = true
			}
		}
	}
	for _, c := range lifecycle.RejectionCodeValues {
		if !codes[string(c)] {
			t.Errorf("no scenario expects rejection %s", c)
		}
	}
	for _, k := range reducer.EventKinds {
		if !kinds[string(k)] {
			t.Errorf("no scenario sends %s", k)
		}
	}
}
