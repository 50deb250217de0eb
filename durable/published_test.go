package durable

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk"
)

// SquaresIn is the input of an application's flow that only its own
// worker registers (app.squares in the tests below).
type SquaresIn struct {
	Numbers []int    `json:"numbers"`
	Scale   *float64 `json:"scale,omitempty"`
	Label   string   `json:"label,omitzero"`
}

func Squares(_ context.Context, in SquaresIn) (int, error) {
	total := 0
	for _, n := range in.Numbers {
		total += n * n
	}
	if in.Scale != nil {
		total = int(float64(total) * *in.Scale)
	}
	return total, nil
}

var SquaresFlow = sdk.Step(Squares)

type schemaInner struct {
	When time.Time `json:"when"`
}

type schemaEmbedded struct {
	Shared string `json:"shared"`
}

type schemaNode struct {
	Value    int           `json:"value"`
	Children []*schemaNode `json:"children,omitempty"`
}

type schemaAll struct {
	schemaEmbedded
	B       bool              `json:"b"`
	I8      int8              `json:"i8"`
	U       uint16            `json:"u,omitempty"`
	F       float64           `json:"f"`
	S       string            `json:"s"`
	Raw     []byte            `json:"raw,omitempty"`
	Ptr     *schemaInner      `json:"ptr"`
	M       map[string]int    `json:"m,omitempty"`
	A       [2]string         `json:"a"`
	Any     any               `json:"any,omitempty"`
	Quoted  int               `json:"quoted,string"`
	Skipped int               `json:"-"`
	NoTag   int               // named by its Go name
	Node    schemaNode        `json:"node"`
	RawJSON json.RawMessage   `json:"raw_json,omitempty"`
	Nested  map[string][]bool `json:"nested,omitempty"`
}

// The input schema is generated from the Go type the way encoding/json
// reads it.
func TestInputSchemaOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"int", reflect.TypeFor[int](), `{"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807}`},
		{"uint64", reflect.TypeFor[uint64](), `{"type":"integer","minimum":0,"maximum":18446744073709551615}`},
		{"string", reflect.TypeFor[string](), `{"type":"string"}`},
		{"pointer", reflect.TypeFor[*bool](), `{"type":["boolean","null"]}`},
		{"slice", reflect.TypeFor[[]float32](), `{"type":["array","null"],"items":{"type":"number"}}`},
		{"application input", reflect.TypeFor[SquaresIn](), `{"type":"object","properties":{` +
			`"label":{"type":"string"},` +
			`"numbers":{"type":["array","null"],"items":{"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807}},` +
			`"scale":{"type":["number","null"]}},"required":["numbers"],"additionalProperties":false}`},
		{"every kind", reflect.TypeFor[schemaAll](), `{"type":"object","properties":{` +
			`"NoTag":{"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807},` +
			`"a":{"type":"array","items":{"type":"string"}},` +
			`"any":{},` +
			`"b":{"type":"boolean"},` +
			`"f":{"type":"number"},` +
			`"i8":{"type":"integer","minimum":-128,"maximum":127},` +
			`"m":{"type":["object","null"],"additionalProperties":{"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807}},` +
			`"nested":{"type":["object","null"],"additionalProperties":{"type":["array","null"],"items":{"type":"boolean"}}},` +
			`"node":{"type":"object","properties":{"children":{"type":["array","null"],"items":{}},` +
			`"value":{"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807}},"required":["value"],"additionalProperties":false},` +
			`"ptr":{"type":["object","null"],"properties":{"when":{"type":"string","format":"date-time"}},"required":["when"],"additionalProperties":false},` +
			`"quoted":{"type":"string"},` +
			`"raw":{"type":["string","null"]},` +
			`"raw_json":{},` +
			`"s":{"type":"string"},` +
			`"shared":{"type":"string"},` +
			`"u":{"type":"integer","minimum":0,"maximum":65535}},` +
			`"required":["shared","b","i8","f","s","ptr","a","quoted","NoTag","node"],"additionalProperties":false}`},
	}
	for _, c := range cases {
		got, err := InputSchemaOf(c.typ)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var gotV, wantV any
		if err := json.Unmarshal(got, &gotV); err != nil {
			t.Fatalf("%s: %v: %s", c.name, err, got)
		}
		want := `{"$schema":"https://json-schema.org/draft/2020-12/schema",` + c.want[1:]
		if err := json.Unmarshal([]byte(want), &wantV); err != nil {
			t.Fatalf("%s: the expected schema: %v", c.name, err)
		}
		if d := cmp.Diff(wantV, gotV); d != "" {
			t.Errorf("%s: schema (-want +got):\n%s", c.name, d)
		}
	}
}

// A published schema refuses bad input with the field at fault, and
// accepts what encoding/json decodes into the type.
func TestValidateInputNamesTheField(t *testing.T) {
	t.Parallel()
	schema, err := InputSchemaOf(reflect.TypeFor[schemaAll]())
	if err != nil {
		t.Fatal(err)
	}
	good := `{"shared":"x","b":true,"i8":127,"f":1.5,"s":"s","ptr":{"when":"2026-12-03T19:00:00Z"},"a":["p","q"],` +
		`"quoted":"12","NoTag":-3,"node":{"value":1,"children":[{"value":2,"children":null}]},"m":{"k":1},"any":[1,{}],` +
		`"raw_json":{"free":true},"nested":{"x":[true]},"u":65535,"raw":"AAE="}`
	if err := validateInput("t", schema, []byte(good)); err != nil {
		t.Fatalf("valid input refused: %v", err)
	}
	var v schemaAll
	if err := json.Unmarshal([]byte(good), &v); err != nil {
		t.Fatalf("the valid input does not decode: %v", err)
	}
	set := func(field, value string) string {
		var m map[string]json.RawMessage
		_ = json.Unmarshal([]byte(good), &m)
		if value == "" {
			delete(m, field)
		} else {
			m[field] = json.RawMessage(value)
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	cases := []struct {
		name, input, field string
	}{
		{"wrong type", set("b", `"yes"`), "b"},
		{"missing required", set("s", ""), "s"},
		{"unknown field", set("extra", `1`), "extra"},
		{"int8 one over the maximum", set("i8", `128`), "i8"},
		{"int8 one under the minimum", set("i8", `-129`), "i8"},
		{"uint16 below 0", set("u", `-1`), "u"},
		{"uint16 one over", set("u", `65536`), "u"},
		{"fraction for an integer", set("NoTag", `1.5`), "NoTag"},
		{"exponent for an integer", set("NoTag", `1e2`), "NoTag"},
		{"nested field", set("ptr", `{"when":"yesterday"}`), "ptr.when"},
		{"array item", set("a", `["p",3]`), "a[1]"},
		{"map value", set("m", `{"k":"v"}`), "m.k"},
		{"nested struct field", set("node", `{"value":"1"}`), "node.value"},
		{"item of a nullable array", set("nested", `{"x":[true,null]}`), "nested.x[1]"},
		{"whole input", `[1]`, ""},
		{"null for a struct", `null`, ""},
	}
	for _, c := range cases {
		err := validateInput("app.all", schema, []byte(c.input))
		var fe *InputFieldError
		if !errors.As(err, &fe) || !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: %v, want an *InputFieldError matching ErrInvalidInput", c.name, err)
			continue
		}
		if fe.Field != c.field || fe.Flow != "app.all" {
			t.Errorf("%s: field %q of %s (%v), want %q", c.name, fe.Field, fe.Flow, err, c.field)
		}
	}
	// At the edges: accepted.
	for _, in := range []string{set("i8", `-128`), set("u", `0`), set("ptr", `null`), set("m", ""), set("f", `3`)} {
		if err := validateInput("app.all", schema, []byte(in)); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
}

// An application's flow, registered only in its own worker, is published
// by that worker while it lives: a client that has not registered it
// enqueues it by name with its input checked against the published
// schema (the field named), refuses a queue no live worker serves unless
// AllowUnserved, and forgets the flow when the worker stops. A flow
// registered after the worker started is published by its next sweep.
func TestPublishedFlows(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	queue := ownKey(t, "app-queue")
	appReg := NewRegistry()
	RegisterIn(appReg, "app.squares", SquaresFlow)
	c := NewClient(e.pool, NewRegistry()) // the CLI's view: it knows no application flow
	if _, err := c.EnqueueJSON(ctx, "app.squares", []byte(`{"numbers":[1]}`), EnqueueOptions{Queue: queue}); !errors.Is(err, ErrUnknownFlow) {
		t.Fatalf("before any worker publishes it: %v, want ErrUnknownFlow", err)
	}
	o := fastOptions()
	o.ID, o.Queue, o.Registry = "app-worker", queue, appReg
	_, stop := runWorkerW(t, e.pool, o)
	var flows []PublishedFlow
	testwait.Until(t, 20*time.Second, "app.squares published", func() bool {
		var err error
		flows, err = c.Flows(ctx, "")
		return err == nil && len(flows) == 1
	})
	m, err := appReg.lookup("app.squares")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := m.materialize(false)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := appReg.InputSchema("app.squares")
	if err != nil {
		t.Fatal(err)
	}
	build := ""
	if r := plan.Plan.Definition.BuildRevision; r != nil {
		build = *r
	}
	want := []PublishedFlow{{Flow: "app.squares", Queue: queue, Fingerprint: plan.Fingerprint, BuildRevision: build,
		InputSchema: schema, Workers: []string{"app-worker"}}}
	if d := cmp.Diff(want, flows, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".PublishedAt" }, cmp.Ignore())); d != "" {
		t.Fatalf("published flows (-want +got):\n%s", d)
	}
	id, err := c.EnqueueJSON(ctx, "app.squares", []byte(`{"numbers":[1,2,3]}`), EnqueueOptions{Queue: queue})
	if err != nil {
		t.Fatal(err)
	}
	if task := e.wait(id, 20*time.Second); task.State != StateSucceeded || string(task.Result) != "14" {
		t.Fatalf("%s %s (%s)", task.State, task.Result, task.ErrorMessage)
	}
	for _, bad := range []struct{ input, field string }{
		{`{"numbers":"1,2"}`, "numbers"},
		{`{"numbers":[1,"2"]}`, "numbers[1]"},
		{`{}`, "numbers"},
		{`{"numbers":[1],"scale":"x"}`, "scale"},
		{`{"numbers":[1],"extra":true}`, "extra"},
	} {
		_, err := c.EnqueueJSON(ctx, "app.squares", []byte(bad.input), EnqueueOptions{Queue: queue})
		var fe *InputFieldError
		if !errors.As(err, &fe) || fe.Field != bad.field || !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: %v, want an *InputFieldError for %q", bad.input, err, bad.field)
		}
	}
	if _, err := c.EnqueueJSON(ctx, "app.squares", []byte(`{"numbers":[1]}`), EnqueueOptions{Queue: queue + "-other"}); !errors.Is(err, ErrUnserved) {
		t.Fatalf("a queue no live worker serves: %v, want ErrUnserved", err)
	}
	unserved, err := c.EnqueueJSON(ctx, "app.squares", []byte(`{"numbers":[1]}`), EnqueueOptions{Queue: queue + "-other", AllowUnserved: true})
	if err != nil {
		t.Fatalf("AllowUnserved: %v", err)
	}
	if _, err := c.EnqueueJSON(ctx, "app.squares", []byte(`{"numbers":1}`), EnqueueOptions{Queue: queue + "-other", AllowUnserved: true}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("AllowUnserved still checks a published schema: %v", err)
	}
	// A flow registered later is published by the next sweep.
	RegisterIn(appReg, "app.echo", EchoFlow)
	testwait.Until(t, 20*time.Second, "app.echo published", func() bool {
		flows, err = c.Flows(ctx, "app.echo")
		return err == nil && len(flows) == 1 && slices.Equal(flows[0].Workers, []string{"app-worker"})
	})
	stop()
	if flows, err := c.Flows(ctx, ""); err != nil || len(flows) != 0 {
		t.Fatalf("after the worker stopped: %v %+v", err, flows)
	}
	if _, err := c.EnqueueJSON(ctx, "app.squares", []byte(`{"numbers":[1]}`), EnqueueOptions{Queue: queue}); !errors.Is(err, ErrUnknownFlow) {
		t.Fatalf("after the worker stopped: %v, want ErrUnknownFlow", err)
	}
	late, err := c.EnqueueJSON(ctx, "app.later", []byte(`{"anything":[1]}`), EnqueueOptions{Queue: queue, AllowUnserved: true})
	if err != nil {
		t.Fatalf("AllowUnserved for a flow no one publishes: %v", err)
	}
	for _, id := range []string{unserved, late} {
		if task, err := c.Get(ctx, id); err != nil || task.State != StateQueued {
			t.Fatalf("%s: %v %+v", id, err, task)
		}
	}
}

// The published flows of a worker process killed with kill -9 are no
// longer served at once (its session lock is free), and a sweep deletes
// them with the worker's row.
func TestKilledWorkersFlowsGoWithIt(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	queue := ownKey(t, "doomed-queue")
	cmd := e.startChildOn("doomed-publisher", queue, false)
	testwait.Until(t, 20*time.Second, "the child's flows published", func() bool {
		flows, err := e.c.Flows(ctx, "test.echo")
		return err == nil && len(flows) == 1 && flows[0].Queue == queue
	})
	_ = cmd.Process.Kill() // SIGKILL
	_ = cmd.Wait()
	testwait.Until(t, 20*time.Second, "the killed worker's flows unlisted", func() bool {
		flows, err := e.c.Flows(ctx, "")
		return err == nil && len(flows) == 0
	})
	e.startWorker(fastOptions()) // its sweep deletes the dead worker's rows
	testwait.Until(t, 30*time.Second, "the dead worker's rows deleted", func() bool {
		return e.count(`SELECT count(*) FROM rayflow_worker_flows WHERE worker_id = 'doomed-publisher'`) == 0 &&
			e.count(`SELECT count(*) FROM rayflow_workers WHERE worker_id = 'doomed-publisher'`) == 0
	})
}
