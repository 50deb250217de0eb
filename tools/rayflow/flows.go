package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/rayflow/rayflow/durable"
)

func init() {
	register("flows", "list the flows live durable workers publish (PostgreSQL)", cmdFlows)
}

const flowsSynopsis = `flows list [--json] [FLOW]

Lists the flows that live durable workers publish (docs/durable.md#published-flows):
one line per flow, queue, build revision and plan fingerprint, sorted by flow and
queue, with the ids of the workers that serve it (comma-separated, sorted):

  FLOW  QUEUE  WORKERS  BUILD  FINGERPRINT

BUILD is the plan's build revision ("-" when it has none). --json prints the same
list as a JSON array of objects (flow, queue, plan_fingerprint, build_revision,
input_schema, workers, published_at). "rayflow tasks enqueue FLOW" accepts any flow
listed here, checking its input against the published input schema.

The connection comes from --database-url or RAYFLOW_DATABASE_URL.`

const flowsExamples = `rayflow flows list
rayflow flows list --json
`

func cmdFlows(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "flows", flowsSynopsis, flowsExamples)
	dbURL := databaseFlag(fs)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	words, code := parseWithSubcommands(fs, e, args)
	if code >= 0 {
		return code
	}
	if len(words) < 1 || len(words) > 2 || words[0] != "list" {
		fs.Usage()
		return exitUsage
	}
	name := ""
	if len(words) == 2 {
		name = words[1]
	}
	pool, code := openPool(ctx, e, *dbURL, 1)
	if code >= 0 {
		return code
	}
	defer pool.Close()
	flows, err := durable.NewClient(pool, nil).Flows(ctx, name)
	if err != nil {
		fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
		return exitError
	}
	if *asJSON {
		if flows == nil {
			flows = []durable.PublishedFlow{}
		}
		b, _ := json.MarshalIndent(flows, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FLOW\tQUEUE\tWORKERS\tBUILD\tFINGERPRINT")
	for _, f := range flows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Flow, f.Queue, strings.Join(f.Workers, ","), orDash(f.BuildRevision), f.Fingerprint)
	}
	tw.Flush()
	return exitOK
}
