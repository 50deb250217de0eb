// Command fingerprint is rayflow's first demo: it builds a small
// effective-plan-shaped record as ordinary Go values, encodes it as
// canonical JSON v1 and prints its domain-separated SHA-256 fingerprint and
// a definition revision. With -json it prints the record as ordinary,
// indented encoding/json text instead, so the CLI can be shown to reach the
// same bytes: `go run ./examples/fingerprint -json | rayflow fingerprint`.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/rayflow/rayflow/sdk/canonical"
)

// node is one step of the example plan.
type node struct {
	ID           string   `json:"node_id"`
	Operation    string   `json:"operation"`
	Callable     *int     `json:"callable"`
	Dependencies []string `json:"dependencies"`
	Label        string   `json:"label"`
}

// plan is a trimmed effective plan: enough fields to show canonical
// ordering, NFC and float folding. The full IR comes from gen/.
type plan struct {
	Format        string            `json:"plan_format"`
	FormatVersion int               `json:"plan_format_version"`
	Definition    string            `json:"definition_name"`
	Nodes         []node            `json:"nodes"`
	Callables     []string          `json:"callables"`
	Resources     map[string]any    `json:"resources"`
	Labels        map[string]string `json:"labels"`
}

func ptr(i int) *int { return &i }

func example() plan {
	return plan{
		Format:        "rayflow.workflow-plan",
		FormatVersion: 1,
		Definition:    "order-fulfillment",
		Callables:     []string{"example.com/shop/steps.Reserve", "example.com/shop/steps.Ship"},
		Nodes: []node{
			{ID: "0", Operation: "chain", Dependencies: []string{}, Label: "fulfil"},
			{ID: "0.0", Operation: "step", Callable: ptr(0), Dependencies: []string{}, Label: "reserve"},
			{ID: "0.1", Operation: "step", Callable: ptr(1), Dependencies: []string{"0.0"}, Label: "ship"},
		},
		// 2.0 CPUs folds to the integer 2; 0.5 stays a float.
		Resources: map[string]any{"num_cpus": 2.0, "memory_fraction": 0.5},
		// "Cafe\u0301" (decomposed) is stored in NFC as "Café".
		Labels: map[string]string{"team": "Cafe\u0301", "tier": "gold"},
	}
}

func main() {
	asJSON := flag.Bool("json", false, "print the record as ordinary indented JSON text and exit")
	flag.Parse()
	p := example()
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(p); err != nil {
			log.Fatal(err)
		}
		return
	}
	fp, canon, err := canonical.Fingerprint(canonical.DomainPlan, p)
	if err != nil {
		log.Fatal(err)
	}
	rev, _, err := canonical.Fingerprint(canonical.DomainDefinition, map[string]any{
		"build_revision":         nil,
		"callables":              p.Callables,
		"container_image_digest": nil,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("canonical plan (%d bytes):\n%s\n\n", len(canon), canon)
	fmt.Printf("plan fingerprint:    %s\n", fp)
	fmt.Printf("definition revision: %s\n", rev)
}
