package schema_test

import (
	"encoding/json"
	"os"
	"sort"
	"testing"

	"github.com/rayflow/rayflow/gen/limits"
)

// limitsFixtures cover the limits profiles (docs/contracts.md#limits-profiles, docs/contracts.md#metrics-and-metadata, docs/contracts.md#output-previews).
// The base fixtures are the v1 values, so every cap is tested at its v1
// value; each bounded field is then widened by one (a profile may only
// narrow v1) and zeroed once.
func limitsFixtures(t testing.TB) []fixture {
	var out []fixture
	for _, def := range []string{"LimitsProfile", "LimitsPreviewProfile", "LimitsMetricsProfile"} {
		base := loadBase(t, def, "base").(map[string]any)
		var keys []string
		for k, v := range base {
			if _, ok := v.(json.Number); ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			n, _ := base[k].(json.Number).Int64()
			code := "MAX"
			if def != "LimitsProfile" && isFixedCost(k) {
				code = "CONST"
			}
			out = append(out, fixture{Def: def, Name: "widen_" + k, Base: "base", Edits: []edit{set("/"+k, n+1)}, Want: []string{code + " /" + k}})
		}
		zeroKey := keys[0]
		out = append(out, fixture{Def: def, Name: "zero_" + zeroKey, Base: "base", Edits: []edit{set("/"+zeroKey, 0)}, Want: []string{minOrConst(def, zeroKey) + " /" + zeroKey}})
		out = append(out, fixture{Def: def, Name: "name_pattern", Base: "base", Edits: []edit{set("/name", "V1")}, Want: []string{"PATTERN /name"}})
	}
	out = append(out, fixture{Def: "LimitsProfile", Name: "terminal_narrower", Base: "terminal_v1", Edits: []edit{set("/topology_nodes", 100)}, Valid: true})
	return out
}

func isFixedCost(k string) bool {
	switch k {
	case "key_min_bytes", "max_safe_integer":
		return true
	}
	return len(k) > 5 && k[:5] == "cost_"
}

func minOrConst(def, k string) string {
	if def != "LimitsProfile" && isFixedCost(k) {
		return "CONST"
	}
	return "MIN"
}

// TestLimitsValues checks that the generated Go profile values are the CUE
// values the fixtures hold.
func TestLimitsValues(t *testing.T) {
	for _, c := range []struct {
		file string
		v    any
	}{
		{"testdata/valid/LimitsProfile/base.json", limits.ProfileV1},
		{"testdata/valid/LimitsProfile/terminal_v1.json", limits.ProfileTerminalV1},
		{"testdata/valid/LimitsPreviewProfile/base.json", limits.PreviewV1},
		{"testdata/valid/LimitsMetricsProfile/base.json", limits.MetricsV1},
	} {
		want, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if got := encode(t, decodeAny(t, encode(t, c.v))); string(got) != string(encode(t, decodeAny(t, want))) {
			t.Errorf("%s: Go value %s differs from %s", c.file, got, want)
		}
	}
	if limits.ProfileTerminalV1.Name != "terminal-v1" || limits.ProfileV1.Name != "v1" {
		t.Error("profile names")
	}
}
