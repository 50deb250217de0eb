package canonical_test

import (
	"errors"
	"fmt"

	"github.com/rayflow/rayflow/sdk/canonical"
)

func ExampleTransform() {
	out, err := canonical.Transform([]byte(`{"b": 1.0, "a": ["e\u0301", 1e23, 0.5]}`))
	fmt.Println(string(out), err)
	// Output: {"a":["é",99999999999999991611392,0.5],"b":1} <nil>
}

func ExampleMarshal() {
	type step struct {
		ID       string  `json:"node_id"`
		NumCPUs  float64 `json:"num_cpus"`
		Callable string  `json:"callable"`
	}
	out, err := canonical.Marshal(step{ID: "0.1", NumCPUs: 2, Callable: "example.com/app.Resize"})
	fmt.Println(string(out), err)
	// Output: {"callable":"example.com/app.Resize","node_id":"0.1","num_cpus":2} <nil>
}

func ExampleFingerprint() {
	d, _, err := canonical.Fingerprint(canonical.DomainPlan, map[string]any{
		"plan_format":         "rayflow.workflow-plan",
		"plan_format_version": 1,
	})
	fmt.Println(d, err)
	// Output: sha256:0f4ed160732e241bc2262a1ae601c45846e9e8e2ee1d6f894ef448265d1042a0 <nil>
}

func ExampleCodec_Transform_noFold() {
	out, _ := canonical.NoFold.Transform([]byte(`{"progress_percent": 100.0, "b": 50.0}`))
	fmt.Println(string(out))
	// Output: {"b":50.0,"progress_percent":100.0}
}

func ExampleError() {
	_, err := canonical.Transform([]byte(`{"limits":{"max_items":NaN}}`))
	var ce *canonical.Error
	if errors.As(err, &ce) {
		fmt.Println(ce.Rule, ce.Path)
	}
	fmt.Println(errors.Is(err, canonical.RuleNonFinite), errors.Is(err, canonical.ErrRejected))
	// Output:
	// non_finite /limits/max_items
	// true true
}

func ExampleNodeKey() {
	fmt.Println(canonical.NodeKey("0.1.m0"))
	// Output: 66bc1790e35ff5f7eb24fc519ca77d37ec6afbe81d660ad9b3ff190acd0c273b
}
