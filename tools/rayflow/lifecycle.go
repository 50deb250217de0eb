package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/rayflow/rayflow/conformance/lifecycle/reducer"
)

func init() {
	register("lifecycle", "replay compiled-invocation lifecycle scenarios", cmdLifecycle)
}

const lifecycleHelp = `replay FILE runs a JSON-lines scenario through the compiled-invocation
lifecycle reducer (protocol v1, docs/lifecycle.md) and prints one canonical JSON
line per event, then the final snapshot (schema 1) as canonical JSON.

Input (one JSON object per line; blank lines are skipped):
  line 1, a new session:
    {"description":"optional text","protocol_version":1,
     "session_identity":{"task_execution_pk":42,"attempt_number":1,"execution_generation":0,"run_id":"rayflow:42"},
     "deadlines":{"outer":100,"admission":10,"submission":20,"result":30,"cancellation":40,"drain":50,"teardown":60},
     "capacity":{"session_owners":1,"callers":1,"maximum_in_flight":1,"maximum_buffered_results":1,"owner_concurrency":1,"queue_capacity":0}}
  or a restored one:
    {"description":"…","snapshot":{…snapshot schema 1…},"last_completed_token":"optional"}
  then one event per line:
    {"kind":"ADMISSION_REQUESTED","protocol_version":1,"observed_at":2.5,
     "session_identity":{…as above…},
     "invocation_identity":{…session fields…,"invocation_id":"inv-1"},
     "action_token":"cg-lifecycle-v1:3:ADMIT","declared_outputs":1,"output_index":0}
  invocation_identity, action_token, declared_outputs and output_index are
  optional (absent or null). Ill-typed fields are rejected by the reducer
  with the protocol's code, not by the parser.

Output, one line per event:
  {"action":{"deadline":10.0,"declared_outputs":1,"invocation_id":"inv-1","kind":"ADMIT","output_index":null,"token":"cg-lifecycle-v1:3:ADMIT"}}
                                           accepted; perform this action (invocation_id
                                           is null for session-scoped actions)
  {"action":null}                          accepted, no action issued
  {"rejection":"STALE_ACTION_TOKEN"}       refused; the state is unchanged
then the final snapshot. A malformed line stops the replay after every
outcome line before it has been printed (exit 1). A refused header (capacity other than
1/1/1/1/1/0, protocol version other than 1, invalid identity, deadlines or
snapshot) prints only {"session_rejection":"CODE"} and exits 3.
conformance/lifecycle/README.md documents the format in full.`

func cmdLifecycle(_ context.Context, e env, args []string) int {
	fs := newFlags(e, "lifecycle", "lifecycle replay FILE\n\n"+lifecycleHelp, `rayflow lifecycle replay conformance/lifecycle/scenarios/cmd_happy_single_output.jsonl
    {"action":{"deadline":100.0,"declared_outputs":null,"invocation_id":null,"kind":"VALIDATE","output_index":null,"token":"cg-lifecycle-v1:1:VALIDATE"}}
    {"action":null}
    …
    {"capacity":{…},"cleanup_diagnostics":[],…,"session_state":"READY","strategy_fallback_allowed":false}
rayflow lifecycle replay - < scenario.jsonl      # read stdin
`)
	if code := parse(fs, e, args); code >= 0 {
		return code
	}
	if fs.NArg() != 2 || fs.Arg(0) != "replay" {
		fs.SetOutput(e.stderr)
		fs.Usage()
		return exitUsage
	}
	in := e.stdin
	if name := fs.Arg(1); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			errorLine(e, "%v", err)
			return exitError
		}
		defer f.Close()
		in = f
	}
	err := reducer.Replay(in, e.stdout)
	var rej *reducer.Rejection
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &rej):
		fmt.Fprintf(e.stderr, "rejected: %s: %s\n", string(rej.Code), rej.Message)
		return exitRejected
	}
	errorLine(e, "lifecycle replay: %v", err)
	return exitError
}
