package ray

import (
	"bufio"
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/rayflow/rayflow/gen/common"
)

// submitWire is a submit item as encoding/json writes it: the reference
// for the hand-written submit frame (writeSubmitsLocked).
type submitWire struct {
	H         objHandle      `json:"h"`
	Exe       string         `json:"exe"`
	Lib       string         `json:"lib,omitempty"`
	LibRev    string         `json:"lib_rev,omitempty"`
	Name      string         `json:"name"`
	Node      string         `json:"node"`
	Digest    string         `json:"digest"`
	O         int            `json:"o,omitempty"`
	Options   map[string]any `json:"options,omitempty"`
	Bootstrap bool           `json:"bootstrap,omitempty"`
	Bound     *int           `json:"bound,omitempty"`
	Arg       *argWire       `json:"arg,omitempty"`
	Progress  *progressWire  `json:"progress,omitempty"`
	Batch     *batchWire     `json:"batch,omitempty"`
	Trace     string         `json:"trace,omitempty"`
	Ident     string         `json:"ident,omitempty"`
	Inline    int            `json:"inline,omitempty"`
}

// referenceSubmit encodes queued submissions with encoding/json, as the
// submit frame was written before it was written by hand.
func referenceSubmit(t *testing.T, batch []leafSubmit) (map[string]any, [][]byte) {
	t.Helper()
	optIDs := map[string]int{}
	items := make([]submitWire, len(batch))
	var sections [][]byte
	for i, q := range batch {
		tk := q.t
		w := submitWire{H: q.h, Exe: tk.Exe, Lib: tk.Lib, LibRev: tk.LibRevision, Name: tk.Callable, Node: tk.Node, Digest: tk.Digest,
			Bootstrap: tk.Bootstrap, Trace: tk.Trace, Ident: tk.Identity, Inline: tk.Inline}
		if len(tk.Options) > 0 {
			key := tk.OptionsKey
			if key == "" {
				k, _ := json.Marshal(tk.Options)
				key = string(k)
			}
			id, ok := optIDs[key]
			if !ok {
				id = len(optIDs) + 1
				optIDs[key] = id
				w.Options = tk.Options
			}
			w.O = id
		}
		if tk.Bound != nil {
			n := len(sections)
			sections = append(sections, tk.Bound)
			w.Bound = &n
		}
		switch {
		case q.items != nil:
			bw := &batchWire{Map: tk.Map, Base: tk.Base, IH: q.items, Items: make([]int, len(tk.Items))}
			for j, it := range tk.Items {
				bw.Items[j] = len(sections)
				sections = append(sections, it)
			}
			w.Batch = bw
		case tk.Arg.Handle != 0:
			w.Arg = &argWire{H: tk.Arg.Handle}
		default:
			n := len(sections)
			sections = append(sections, tk.Arg.Bytes)
			w.Arg = &argWire{S: &n}
		}
		if p := tk.Progress; p != nil {
			w.Progress = &progressWire{Actor: p.Actor, Identity: p.Identity, Label: p.Label, Preview: p.Preview}
		}
		items[i] = w
	}
	sizes := make([]int, len(sections))
	for i, s := range sections {
		sizes[i] = len(s)
	}
	js, err := json.Marshal(map[string]any{"op": "submit", "id": 0, "items": items, "sizes": sizes})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(js, &out); err != nil {
		t.Fatal(err)
	}
	return out, sections
}

// The hand-written submit frame decodes to exactly what encoding/json
// wrote: every field of a plain leaf, a leaf with options (its set's first
// and a later item), a bound value, an object-store argument, a batch,
// progress, a trace, a run identity and strings that need escaping.
func TestSubmitFrameMatchesJSON(t *testing.T) {
	ident := `{"run_id":"r-1","attempt":1,"name":"a \"quoted\" run"}`
	opts := map[string]any{"num_cpus": 0.25, "resources": map[string]any{"x": 1.0}}
	prog := &leafProgressEvent{Actor: 9, Identity: common.RunIdentity{}, Label: "step <1> & more", Preview: "prev"}
	cases := []struct {
		name  string
		batch []leafSubmit
	}{
		{"plain", []leafSubmit{{h: 1, t: leafTask{Exe: "/bin/leaf", Callable: "pkg.Step", Node: "0.m12", Digest: "sha256:ab", Arg: taskArg{Bytes: []byte("12")}}}}},
		{"every field", []leafSubmit{
			{h: 2, t: leafTask{Exe: "/tmp/a b/leaf", Lib: "/lib/x.so", LibRevision: "vcs:1", Callable: "pkg.Step", Node: "1.2", Bound: []byte(`{"b":1}`),
				Arg: taskArg{Bytes: []byte(`"in"`)}, Options: opts, OptionsKey: "k1", Bootstrap: true, Progress: prog,
				Trace: "00-0123-4567-01", Identity: ident, Inline: 1 << 20}},
			{h: 3, t: leafTask{Exe: "/tmp/a b/leaf", Callable: "pkg.Step", Node: "1.3", Arg: taskArg{Handle: 77}, Options: opts, OptionsKey: "k1", Identity: ident}},
			{h: 4, t: leafTask{Exe: "/tmp/a b/leaf", Callable: "pkg.Other", Node: "1.4", Arg: taskArg{Bytes: []byte("1")}, Options: map[string]any{"num_cpus": 2.0}}},
		}},
		{"batch", []leafSubmit{{h: 5, items: []objHandle{6, 7, 8}, t: leafTask{Exe: "/bin/leaf", Callable: "pkg.Step", Node: "0.m0", Bound: []byte("3"),
			Items: [][]byte{[]byte("1"), []byte("2"), []byte("3")}, Map: "0", Base: 0, Options: opts}}}},
		{"escaped strings", []leafSubmit{{h: 9, t: leafTask{Exe: "/bin/l\u00e9af", Callable: "pkg.\"Step\"", Node: "0.m1\\x\n\u2028", Digest: "\x7f",
			Arg: taskArg{Bytes: []byte("1")}, Trace: "t\"race", Identity: "\x01"}}}},
	}
	for _, tc := range cases {
		var buf bytes.Buffer
		b := &rayBridge{optIDs: map[string]int{}, quoted: map[string][]byte{}, w: bufio.NewWriter(&buf)}
		b.pending = tc.batch
		if err := b.writeSubmitsLocked(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := b.w.Flush(); err != nil {
			t.Fatal(err)
		}
		f, err := readFrame(&buf)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got map[string]any
		if err := f.decode(&got); err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, f.raw)
		}
		want, sections := referenceSubmit(t, tc.batch)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the frame differs\ngot  %v\nwant %v", tc.name, got, want)
		}
		if !reflect.DeepEqual(f.sections, sections) {
			t.Errorf("%s: sections %q, want %q", tc.name, f.sections, sections)
		}
	}
}

// parseOKEvent reads exactly the "ok" events the bridge writes and
// leaves everything else to the JSON decoder.
func TestParseOKEvent(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want []objHandle
		ok   bool
	}{
		{`{"event":"ok","hs":[7]}`, []objHandle{7}, true},
		{`{"event":"ok","hs":[1,22,333]}`, []objHandle{1, 22, 333}, true},
		{`{"event":"ok","hs":[]}`, nil, true},
		{`{"event":"ok","hs":[0]}`, []objHandle{0}, true},
		{`{"event":"ok","hs":[999999999999999999]}`, []objHandle{999999999999999999}, true}, // 18 digits: the most read by hand
		{`{"event":"ok","hs":[1000000000000000000]}`, nil, false},                           // 19: to the decoder
		{`{"event":"ok","hs":[1,]}`, nil, false},
		{`{"event":"ok","hs":[,1]}`, nil, false},
		{`{"event":"ok","hs":[01]}`, nil, false},
		{`{"event":"ok","hs":[-1]}`, nil, false},
		{`{"event":"ok","hs":[1 ]}`, nil, false},
		{`{"event":"ok","hs":[1]`, nil, false},
		{`{"event":"ok","hs":[}`, nil, false},
		{`{"id":0,"event":"ok","hs":[1]}`, nil, false},
		{`{"id":0,"event":"ready","ready":[]}`, nil, false},
	} {
		got, ok := parseOKEvent([]byte(tc.raw), nil)
		if ok != tc.ok || (ok && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("%s: got %v %v, want %v %v", tc.raw, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseOKEvent: whatever parseOKEvent accepts is an "ok" event the
// JSON decoder reads to the same handles.
func FuzzParseOKEvent(f *testing.F) {
	for _, s := range []string{`{"event":"ok","hs":[7,8]}`, `{"event":"ok","hs":[]}`, `{"event":"ok","hs":[01]}`, `{"event":"ok","hs":[1,]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := parseOKEvent(raw, nil)
		if !ok {
			return
		}
		var ev struct {
			Event string      `json:"event"`
			HS    []objHandle `json:"hs"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil || ev.Event != "ok" {
			t.Fatalf("accepted %q, which the decoder reads as %+v (%v)", raw, ev, err)
		}
		if len(got) != len(ev.HS) || (len(got) > 0 && !reflect.DeepEqual(got, ev.HS)) {
			t.Fatalf("%q: %v, the decoder %v", raw, got, ev.HS)
		}
	})
}

// FuzzAppendJSONString: appendJSONString writes a JSON string that
// decodes to the string encoding/json's own encoding decodes to.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "0.m1", `a"b`, `a\b`, "\x00", "\u00e9", "\xff", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got, want string
		if err := json.Unmarshal(appendJSONString(nil, s), &got); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		js, _ := json.Marshal(s)
		_ = json.Unmarshal(js, &want)
		if got != want {
			t.Fatalf("%q: %q, encoding/json %q", s, got, want)
		}
	})
}
