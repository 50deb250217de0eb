package reader

import (
	"context"
	"fmt"
	"math"
	"regexp"

	"github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/internal/store"
)

// A map's failed items, as the task store keeps them. A map stops at its
// first failed item and cancels the items in flight, so an attempt
// records at most one failed item of a map: the item its stored error
// (error_message of the task row or of rayflow_task_attempts) names, as
// "step <map>.m<index> (…" or "step <map>.m<index>.<child> (…" of a
// step inside the item's body (sdk/flowgraph/ids.go spells the ids).

// FailedItem is one attempt's failed item of a map.
type FailedItem struct {
	// Attempt is the attempt number; State the attempt's state.
	Attempt int64
	State   string
	// Index is the item's index in the map's input.
	Index int64
	// ErrorType and ErrorMessage are the attempt's stored error;
	// MessageBytes is the message's size, and ErrorMessage is empty when
	// it is over the maxMessage given to MapFailedItems.
	ErrorType    string
	ErrorMessage string
	MessageBytes int64
}

// MaxNodeIDBytes is the longest node id (the topology record's bound).
const MaxNodeIDBytes = 256

// itemPattern is the regular expression (PostgreSQL's and Go's) of an
// error naming an item of map mapID, the index captured.
func itemPattern(mapID string) string {
	return `step ` + regexp.QuoteMeta(mapID) + `\.m([0-9]{1,18})[ .]`
}

// MapFailedItems authorizes principal to read taskID's progress and lists
// the failed items of the map mapID recorded by the task's attempts
// numbered below before (0: all), newest first, at most limit (1 to
// 1,000); a message over maxMessage bytes is not loaded.
func (s *Service) MapFailedItems(ctx context.Context, principal, taskID, mapID string, before int64, limit int, maxMessage int) ([]FailedItem, error) {
	switch {
	case mapID == "" || len(mapID) > MaxNodeIDBytes:
		return nil, errorf(read.ErrorCodeInvalidArgument, "node_id must be 1 to %d bytes", MaxNodeIDBytes)
	case limit < 1 || limit > 1000:
		return nil, errorf(read.ErrorCodeInvalidArgument, "limit must be 1 to 1000")
	case before < 0 || before > math.MaxInt32:
		return nil, errorf(read.ErrorCodeInvalidArgument, "before must be 0 to %d", math.MaxInt32)
	}
	pk, err := s.Authorize(ctx, s.pool, principal, taskID, ActionReadProgress)
	if err != nil {
		return nil, err
	}
	if before == 0 {
		before = math.MaxInt32 // past any attempt number (an integer column)
	}
	rows, err := store.MapFailedItems(ctx, s.pool, pk, before, limit, itemPattern(mapID), maxMessage)
	if err != nil {
		return nil, fmt.Errorf("read: listing failed items: %w", err)
	}
	defer rows.Close()
	var out []FailedItem
	for rows.Next() {
		var f FailedItem
		var msg *string
		var size *int32
		if err := rows.Scan(&f.Attempt, &f.State, &f.ErrorType, &f.Index, &size, &msg); err != nil {
			return nil, fmt.Errorf("read: listing failed items: %w", err)
		}
		if size != nil {
			f.MessageBytes = int64(*size)
		}
		if msg != nil {
			f.ErrorMessage = *msg
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read: listing failed items: %w", err)
	}
	return out, nil
}

// MapFailedItemsQuery is the statement MapFailedItems sends and its
// arguments (the tests EXPLAIN it).
func MapFailedItemsQuery(taskPK int64, mapID string, before int64, limit, maxMessage int) (string, []any) {
	if before == 0 {
		before = math.MaxInt32
	}
	return store.MapFailedItemsSQL, []any{taskPK, before, limit, itemPattern(mapID), maxMessage}
}
