package pgledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/rayflow/rayflow/internal/itemledger"
	"github.com/rayflow/rayflow/internal/store"
)

// Default per-task ledger caps.
const (
	DefaultMaxRows  = 1 << 20   // rows (item results) per task
	DefaultMaxBytes = 256 << 20 // result bytes per task
)

// Limits bound one task's ledger; zero fields take the defaults.
type Limits struct {
	MaxRows  int64
	MaxBytes int64
}

// ErrInvalidLimits is returned by New for a negative limit.
var ErrInvalidLimits = errors.New("pgledger: invalid limits")

// Ledger is the item ledger of one attempt (see the package doc).
type Ledger struct {
	q   store.Querier
	run store.Run
	lim Limits
	log *slog.Logger

	mu          sync.Mutex
	loaded      bool  // rows and bytes hold the task's usage
	empty       bool  // the task had no row when the usage was read
	rows, bytes int64 // the task's usage, including batches in flight
	full        bool  // the cap was reached (logged once)
}

var _ itemledger.Ledger = (*Ledger)(nil)

// New returns the ledger of attempt run on q (a pool). log (default
// slog.Default()) receives one warning when the task's ledger is full.
func New(q store.Querier, run store.Run, lim Limits, log *slog.Logger) (*Ledger, error) {
	if lim.MaxRows < 0 || lim.MaxBytes < 0 {
		return nil, fmt.Errorf("%w: rows %d, bytes %d (must not be negative)", ErrInvalidLimits, lim.MaxRows, lim.MaxBytes)
	}
	if lim.MaxRows == 0 {
		lim.MaxRows = DefaultMaxRows
	}
	if lim.MaxBytes == 0 {
		lim.MaxBytes = DefaultMaxBytes
	}
	if log == nil {
		log = slog.Default()
	}
	return &Ledger{q: q, run: run, lim: lim, log: log}, nil
}

// Lookup returns the recorded results of those of inputs that have one,
// in one statement; none when the task had no row at the attempt's first
// call (an attempt that starts on an empty ledger, such as a task's
// first, finds nothing an earlier attempt recorded and sends no lookup).
func (l *Ledger) Lookup(ctx context.Context, s itemledger.Scope, inputs [][32]byte) (map[[32]byte][]byte, error) {
	if len(inputs) == 0 {
		return nil, nil
	}
	if err := l.load(ctx); err != nil {
		return nil, err
	}
	if l.empty {
		return nil, nil
	}
	return store.LookupItems(ctx, l.q, l.run.TaskPK, s.Node, s.Code, inputs)
}

// Record keeps the items that fit the task's ledger, in one statement,
// and returns how many of items are kept (recorded now or already
// there). Items whose result is over store.MaxLedgerResultBytes, and
// every item beyond the task's caps, are not sent.
func (l *Ledger) Record(ctx context.Context, s itemledger.Scope, items []itemledger.Item) (int, error) {
	if len(items) == 0 {
		return 0, nil
	}
	if err := l.load(ctx); err != nil {
		return 0, err
	}
	// Reserve room for the items that fit, in order.
	entries := make([]store.LedgerEntry, 0, len(items))
	var size int64
	l.mu.Lock()
	for _, it := range items {
		n := int64(len(it.Result))
		if n > store.MaxLedgerResultBytes {
			continue
		}
		if l.rows+1 > l.lim.MaxRows || l.bytes+n > l.lim.MaxBytes {
			if !l.full {
				l.full = true
				l.log.Warn("item ledger full: further item results of this task are not kept",
					"task_pk", l.run.TaskPK, "attempt", l.run.Attempt, "node", s.Node,
					"rows", l.rows, "bytes", l.bytes, "max_rows", l.lim.MaxRows, "max_bytes", l.lim.MaxBytes)
			}
			continue
		}
		l.rows++
		l.bytes += n
		size += n
		entries = append(entries, store.LedgerEntry{LedgerKey: store.LedgerKey{NodeID: s.Node, Code: s.Code, Input: it.Input}, Result: it.Result})
	}
	l.mu.Unlock()
	if len(entries) == 0 {
		return 0, nil
	}
	rows, bytes, err := store.RecordItems(ctx, l.q, l.run, entries)
	l.mu.Lock()
	if err != nil {
		rows, bytes = 0, 0
	}
	// Give back what was reserved and not added (an entry already there,
	// or a failed statement).
	l.rows -= int64(len(entries)) - rows
	l.bytes -= size - bytes
	l.mu.Unlock()
	if errors.Is(err, store.ErrStaleRun) {
		// The attempt still holds a task being cancelled: nothing is
		// written, and the cancellation (not the ledger) stops the run,
		// as a progress publication does (progress/pgstore).
		if state, _, serr := store.RunTaskState(ctx, l.q, l.run); serr == nil && state == "CANCELLING" {
			return 0, nil
		}
		return 0, fmt.Errorf("%w: %w", itemledger.ErrFenceLost, err)
	}
	if err != nil {
		return 0, err
	}
	return len(entries), nil
}

// load reads the task's usage once (earlier attempts' and copied rows
// count towards the caps).
func (l *Ledger) load(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loaded {
		return nil
	}
	rows, bytes, err := store.LedgerUsage(ctx, l.q, l.run.TaskPK)
	if err != nil {
		return err
	}
	l.rows, l.bytes, l.loaded, l.empty = l.rows+rows, l.bytes+bytes, true, rows == 0
	return nil
}
