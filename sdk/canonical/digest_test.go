package canonical

import (
	"errors"
	"testing"
)

func TestDigests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		domain Domain
		v      any
		want   string
	}{
		// Fixed vectors 1 and 4 under the rayflow plan domain
		// (docs/contracts.md#number-lines-and-vectors).
		{"plan vector 1", DomainPlan, []byte(`{"b":1,"a":[1.0,-0.0,0.5,1e-05,1e20,1e23,123456789.125,0.0001,-1.5e-07,true,null,1180591620717411303424]}`),
			"sha256:f865c1540454abea0fd2cee073418f6d45f6f2ee43ae8ab7e7e9d88682c7d64f"},
		{"plan vector 4", DomainPlan, map[string]any{"plan_format": "rayflow.workflow-plan", "plan_format_version": 1},
			"sha256:0f4ed160732e241bc2262a1ae601c45846e9e8e2ee1d6f894ef448265d1042a0"},
	} {
		v := tc.v
		if b, ok := v.([]byte); ok {
			var err error
			if v, err = V1.Decode(b); err != nil {
				t.Fatal(err)
			}
		}
		got, _, err := Fingerprint(tc.domain, v)
		if err != nil || got.String() != tc.want {
			t.Errorf("%s: got %s, %v; want %s", tc.name, got, err, tc.want)
		}
		if len(got.String()) != 71 || len(got.Hex()) != 64 {
			t.Errorf("%s: bad rendering %s", tc.name, got)
		}
		if back, err := ParseDigest(got.String()); err != nil || back != got {
			t.Errorf("%s: ParseDigest round trip: %v", tc.name, err)
		}
	}
	if got := NodeKey("0.1.m0"); got != "66bc1790e35ff5f7eb24fc519ca77d37ec6afbe81d660ad9b3ff190acd0c273b" {
		t.Errorf("NodeKey = %s", got)
	}
}

func TestDomainValidate(t *testing.T) {
	t.Parallel()
	for _, d := range Domains {
		if err := d.Validate(); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	for _, bad := range []Domain{"", "a\x00b", "caf\u00e9", "tab\there"} {
		if err := bad.Validate(); !errors.Is(err, ErrInvalidDomain) {
			t.Errorf("%q: want ErrInvalidDomain, got %v", bad, err)
		}
	}
	if _, err := ParseDigest("sha256:ABC"); err == nil {
		t.Error("ParseDigest accepted a short upper-case digest")
	}
}

func TestMetricsOmissionMarker(t *testing.T) {
	t.Parallel()
	b, err := NoFold.Marshal(map[string]any{"rows": 1})
	if err != nil {
		t.Fatal(err)
	}
	m := MetricsOmissionMarker(b)
	if s, _ := m["_omitted"].(string); len(s) != 71 || s[:7] != "sha256:" {
		t.Fatalf("marker %v", m)
	}
}
