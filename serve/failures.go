package serve

import (
	"context"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/serve/reader"
)

// The task page's failures: for each shown attempt that ended with an
// error, the error as the task row or rayflow_task_attempts stores it
// (error_type and error_message), and the node that failed as the
// attempt's retained progress detail records it (a node detail in state
// FAILED), linked to the graph's node page.

// FailedNodesRead is how many FAILED node details of an attempt the task
// page reads (one page) to find the node that failed first.
const FailedNodesRead = 256

type failure struct {
	Attempt               int
	State, Type, Message  string
	MessageOmitted        bool
	NodeID, NodeHref      string
	NodeError, NodeFailed string
}

// failuresOf lists the failures of t's shown attempts (the newest
// MaxStatusAttempts archived ones and the current one), oldest first.
func (s *Server) failuresOf(ctx context.Context, principal string, t *durable.Task) []failure {
	type att struct {
		n            int
		state        durable.State
		errType, msg string
	}
	var as []att
	arch := t.Attempts
	if len(arch) > MaxStatusAttempts {
		arch = arch[len(arch)-MaxStatusAttempts:]
	}
	for _, a := range arch {
		if a.Attempt != t.Attempt {
			as = append(as, att{a.Attempt, a.State, a.ErrorType, a.ErrorMessage})
		}
	}
	as = append(as, att{t.Attempt, t.State, t.ErrorType, t.ErrorMessage})
	var out []failure
	for _, a := range as {
		if a.errType == "" && a.msg == "" {
			continue
		}
		f := failure{Attempt: a.n, State: string(a.state), Type: a.errType, Message: a.msg}
		if len(f.Message) > ErrorMaxBytes {
			f.Message, f.MessageOmitted = "", true
		}
		s.failedNode(ctx, principal, t.ID, &f)
		out = append(out, f)
	}
	return out
}

// failedNode fills in the node of the attempt's retained detail that
// failed first (the earliest finished_at among the first FailedNodesRead
// FAILED details); none when the attempt kept no detail or no failed node.
func (s *Server) failedNode(ctx context.Context, principal, taskID string, f *failure) {
	p, err := s.reads.NodeDetails(ctx, principal, reader.PageRequest{TaskID: taskID, Attempt: int64(f.Attempt), Limit: FailedNodesRead, State: "FAILED"})
	if err != nil {
		return // no progress to point at (a read error shows on the graph page)
	}
	for _, d := range p.Items {
		at := ""
		if d.FinishedAt != nil {
			at = *d.FinishedAt // canonical UTC timestamps order as text
		}
		if f.NodeID == "" || at != "" && (f.NodeFailed == "" || at < f.NodeFailed) {
			f.NodeID, f.NodeFailed, f.NodeError = d.NodeID, at, ""
			if d.Error != nil {
				f.NodeError = *d.Error
			}
		}
	}
	if f.NodeID != "" {
		f.NodeHref = nodeHref(taskID, int64(f.Attempt), f.NodeID)
	}
}
