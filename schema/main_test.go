package schema_test

import (
	"flag"
	"os"
	"testing"
)

// fuzzMinimizeTime bounds the minimization of each new interesting input
// unless -fuzzminimizetime is given. The default (60s) stalls
// FuzzDifferential: the fuzzer's coverage includes CUE's evaluator, so
// mutated fixtures often reach new CUE code, and minimizing a 10–60 KiB
// input at a few milliseconds per CUE evaluation takes the whole minute, with
// no new executions counted meanwhile.
const fuzzMinimizeTime = "2s"

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.fuzzminimizetime" {
			set = true
		}
	})
	if !set && flag.Lookup("test.fuzzminimizetime") != nil {
		if err := flag.Set("test.fuzzminimizetime", fuzzMinimizeTime); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
