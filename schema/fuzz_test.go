package schema_test

import (
	"os"
	"sort"
	"testing"
)

// FuzzDifferential mutates the fixtures and checks that CUE's evaluator and
// the generated Go give the same verdict. Run it with
//
//	go test ./schema -run '^$' -fuzz FuzzDifferential -fuzztime 60s
//
// Without -fuzz it replays the seed corpus (every fixture) quickly.
func FuzzDifferential(f *testing.F) {
	files := fixtureFiles(f)
	defSet := map[string]bool{}
	for _, ff := range files {
		defSet[ff.Def] = true
	}
	var defs []string
	for d := range defSet {
		defs = append(defs, d)
	}
	sort.Strings(defs)
	index := map[string]uint8{}
	for i, d := range defs {
		index[d] = uint8(i)
	}
	for _, ff := range files {
		b, err := os.ReadFile(ff.Path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(index[ff.Def], b)
	}
	ref := reference(f)
	f.Fuzz(func(t *testing.T, di uint8, data []byte) {
		def := defs[int(di)%len(defs)]
		cueErr := ref.Check(def, data)
		goErr := goVerdict(t, def, data)
		if (cueErr == nil) != (goErr == nil) {
			t.Fatalf("#%s: verdicts differ on %q:\n  cue: %v\n  go:  %v", def, data, cueErr, goErr)
		}
	})
}
