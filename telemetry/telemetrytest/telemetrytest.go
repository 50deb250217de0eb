package telemetrytest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Span is one finished span.
type Span struct {
	Name    string
	TraceID string
	SpanID  string
	Parent  string // "" for a root span
	Attrs   map[string]string
	Error   bool   // status Error
	Status  string // the status description
}

// FromStubs converts in-memory spans.
func FromStubs(stubs tracetest.SpanStubs) []Span {
	out := make([]Span, 0, len(stubs))
	for _, s := range stubs {
		sp := Span{Name: s.Name, TraceID: s.SpanContext.TraceID().String(), SpanID: s.SpanContext.SpanID().String(),
			Attrs: map[string]string{}, Error: s.Status.Code == codes.Error, Status: s.Status.Description}
		if s.Parent.IsValid() {
			sp.Parent = s.Parent.SpanID().String()
		}
		for _, a := range s.Attributes {
			sp.Attrs[string(a.Key)] = a.Value.String()
		}
		out = append(out, sp)
	}
	return out
}

// ReadFile reads a RAYFLOW_TRACES_FILE (JSON lines).
func ReadFile(path string) ([]Span, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Span
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var line struct {
			Name        string
			SpanContext struct{ TraceID, SpanID string }
			Parent      struct{ TraceID, SpanID string }
			Attributes  []struct {
				Key   string
				Value struct{ Value any }
			}
			Status struct {
				Code        json.RawMessage
				Description string
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		sp := Span{Name: line.Name, TraceID: line.SpanContext.TraceID, SpanID: line.SpanContext.SpanID, Attrs: map[string]string{},
			Status: line.Status.Description}
		if p := line.Parent.SpanID; p != "" && p != "0000000000000000" {
			sp.Parent = p
		}
		c := string(line.Status.Code)
		sp.Error = c == `"Error"` || c == "1"
		for _, a := range line.Attributes {
			sp.Attrs[a.Key] = fmt.Sprint(a.Value.Value)
		}
		out = append(out, sp)
	}
	return out, sc.Err()
}

// Connected checks that every span whose name is in names has a parent
// chain, within its trace, that reaches a span named root, and returns
// how many it checked per name.
func Connected(spans []Span, root string, names ...string) (map[string]int, error) {
	byID := map[string]Span{}
	for _, s := range spans {
		byID[s.TraceID+"/"+s.SpanID] = s
	}
	counts := map[string]int{}
	for _, s := range spans {
		want := false
		for _, n := range names {
			want = want || s.Name == n
		}
		if !want {
			continue
		}
		counts[s.Name]++
		cur, hops := s, 0
		for cur.Name != root {
			p, ok := byID[cur.TraceID+"/"+cur.Parent]
			if cur.Parent == "" || !ok || hops > 64 {
				return counts, fmt.Errorf("span %s (%s, node %s) does not reach a %s span: its chain stops at %s (%s, parent %q)",
					s.SpanID, s.Name, s.Attrs["rayflow.node.id"], root, cur.SpanID, cur.Name, cur.Parent)
			}
			cur, hops = p, hops+1
		}
	}
	return counts, nil
}

// Trace returns the spans of the trace that holds a span named name with
// attribute key = value.
func Trace(spans []Span, name, key, value string) []Span {
	var trace string
	for _, s := range spans {
		if s.Name == name && s.Attrs[key] == value {
			trace = s.TraceID
		}
	}
	if trace == "" {
		return nil
	}
	var out []Span
	for _, s := range spans {
		if s.TraceID == trace {
			out = append(out, s)
		}
	}
	return out
}
