package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/canonical"

	// The example flows, registered by name.
	_ "github.com/rayflow/rayflow/examples/fanout/workflow"
	"github.com/rayflow/rayflow/internal/sdkhost"
)

func init() {
	register("plan", "show, fingerprint or select the effective plan of a registered flow", cmdPlan)
}

func cmdPlan(_ context.Context, e env, args []string) int {
	fs := newFlags(e, "plan", "plan show|fingerprint|selection|summary|list [flags] [FLOW]\n\n"+
		"Materializes a flow registered with sdk.RegisterFlow (this binary knows: "+strings.Join(sdkhost.RegisteredFlows(), ", ")+")\n"+
		"and prints its canonical plan, its fingerprint, its strategy selection or its summary.",
		`rayflow plan list
rayflow plan fingerprint fanout
rayflow plan show fanout | python3 -m json.tool
rayflow plan selection --ray fanout
rayflow plan selection --strategy compiled_graph fanout    # exit 3: rejected, with reasons
`)
	strategy := fs.String("strategy", string(sdk.StrategyAuto), "requested strategy: auto, local, dynamic_tasks, compiled_graph, static_actors")
	reporting := fs.String("reporting", "full", "reporting policy on Ray: full, terminal_only, disabled")
	ray := fs.Bool("ray", false, "materialize for a Ray engine (auto selects dynamic_tasks)")
	positional, code := parseWithSubcommands(fs, e, args)
	if code >= 0 {
		return code
	}
	if len(positional) > 0 && positional[0] == "list" {
		if len(positional) != 1 {
			errorLine(e, "plan list takes no flow")
			return exitUsage
		}
		for _, n := range sdkhost.RegisteredFlows() {
			fmt.Fprintln(e.stdout, n)
		}
		return exitOK
	}
	if len(positional) != 2 {
		fs.Usage()
		return exitUsage
	}
	verb, name := positional[0], positional[1]
	opts := []sdk.MaterializeOption{sdk.WithStrategy(sdk.Strategy(*strategy)), sdk.WithReportingPolicy(sdk.ReportingPolicy(*reporting))}
	if *ray {
		opts = append(opts, sdk.ForRay())
	}
	m, err := sdkhost.MaterializeRegistered(name, opts...)
	if errors.Is(err, sdk.ErrUnknownFlow) {
		errorLine(e, "no flow named %q (known: %s)", name, strings.Join(sdkhost.RegisteredFlows(), ", "))
		return exitUsage
	}
	if err != nil {
		var se *sdk.SelectionError
		if errors.As(err, &se) {
			for _, r := range se.Rejections {
				fmt.Fprintf(e.stderr, "rejected: %s %s at %s: %s\n", r.Strategy, r.Code, r.Path, r.Message)
			}
			return exitRejected
		}
		var de *sdk.DefinitionError
		if errors.As(err, &de) {
			fmt.Fprintf(e.stderr, "rejected: %s: node %s: %s\n", de.Code, de.Path, strings.ReplaceAll(de.Msg, "\n", " "))
			return exitRejected
		}
		errorLine(e, "%v", err)
		if errors.Is(err, sdk.ErrInvalidDefinition) {
			return exitRejected
		}
		return exitError
	}
	var out []byte
	switch verb {
	case "show":
		out = m.Canonical
	case "fingerprint":
		out = []byte(m.Fingerprint)
	case "selection":
		out, err = canonical.Marshal(m.Selection)
	case "summary":
		out, err = canonical.Marshal(m.Summary())
	default:
		fs.Usage()
		return exitUsage
	}
	if err != nil {
		errorLine(e, "%v", err)
		return exitError
	}
	fmt.Fprintln(e.stdout, string(out))
	return exitOK
}
