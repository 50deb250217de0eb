package reader_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/serve/reader"
)

// teamAuthorizer lets a team read the tasks of the flows it owns; it is
// asked before every read, also about task ids that do not exist (Exists
// false), so a denied caller cannot probe which tasks exist.
type teamAuthorizer struct {
	owners map[string]string // flow -> team
}

func (a teamAuthorizer) Authorize(_ context.Context, principal string, task reader.Task, action reader.Action) error {
	team, _, _ := strings.Cut(principal, "/") // "shipping/alice"
	if action == reader.ActionReadProgress && task.Exists && a.owners[task.Flow] == team {
		return nil
	}
	return reader.ErrDenied
}

// Reading a run's progress with an application's own authorization: the
// summary, then every failed node's detail, page by page. A page's
// cursor is signed and bound to the task, the attempt and the filter.
func ExampleService() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("RAYFLOW_DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	keys, err := reader.NewKeys([]byte(os.Getenv("CURSOR_KEY"))) // at least reader.MinKeyBytes
	if err != nil {
		log.Fatal(err)
	}
	svc, err := reader.New(pool, keys, teamAuthorizer{owners: map[string]string{"orderfulfillment": "shipping"}})
	if err != nil {
		log.Fatal(err)
	}
	const who, task = "shipping/alice", "1175aaf8-4b1c-4f4e-9a3e-0c9f4f3f1a2b"
	// Attempt 0 is the current one. Errors carry the contract's codes,
	// one per HTTP status.
	sum, err := svc.Summary(ctx, who, task, 0)
	if reader.CodeOf(err) == gread.ErrorCodeAccessDenied {
		log.Fatalf("%s may not read %s", who, task) // also when no such task exists
	} else if err != nil {
		log.Fatal(err)
	}
	if sum.Summary != nil {
		fmt.Println(sum.Summary.State, sum.Summary.ProgressPercent)
	}
	req := reader.PageRequest{TaskID: task, State: "FAILED", Limit: 100}
	for {
		page, err := svc.NodeDetails(ctx, who, req)
		if err != nil {
			log.Fatal(err)
		}
		for _, d := range page.Items {
			if d.Error != nil {
				fmt.Println(d.NodeID, *d.Error)
			}
		}
		if page.NextCursor == nil {
			break
		}
		req.Cursor = *page.NextCursor
	}
}
