// Command codeid prints the plan fingerprint and build revision of a
// one-step flow; sdk's code identity test builds it twice, with the step
// body changed, and compares.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/rayflow/rayflow/sdk"
)

// Scale is the step whose body the test changes.
func Scale(_ context.Context, n int) (int, error) { return 2 * n, nil }

var flow = sdk.Step(Scale)

func main() {
	m, err := sdk.Materialize(flow)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rev := "<nil>"
	if r := m.Plan.Definition.BuildRevision; r != nil {
		rev = *r
	}
	fmt.Println(m.Fingerprint, rev)
}
