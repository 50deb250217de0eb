package itemledger

import (
	"context"
	"errors"
)

// ErrFenceLost is returned (wrapped) by Record when the attempt that
// writes no longer holds its task: a newer attempt or a cancellation took
// it over, and nothing was written. The run stops.
var ErrFenceLost = errors.New("rayflow: item ledger: the attempt lost its task's fence")

// Scope names the entries of one resumable map: its node id and the code
// identity of its body (a changed identity makes earlier entries unused).
type Scope struct {
	Node string
	Code [32]byte
}

// Item is one succeeded item: the digest of its encoded input and its
// encoded result.
type Item struct {
	Input  [32]byte
	Result []byte
}

// Ledger keeps resumable maps' item results. Its methods are called from
// several goroutines at once; each call is one batch (one admitted chunk
// for Lookup, several finished items for Record), never one per item.
type Ledger interface {
	// Lookup returns the recorded results of those of inputs that have
	// one, by input digest. An error means "nothing known": the items run.
	Lookup(ctx context.Context, s Scope, inputs [][32]byte) (map[[32]byte][]byte, error)
	// Record keeps items' results. It may keep fewer (a result over the
	// map's cap or the run's ledger cap is not kept: that item reruns
	// next time) and reports how many it kept. An error wrapping
	// ErrFenceLost stops the run; other errors only lose the entries.
	Record(ctx context.Context, s Scope, items []Item) (kept int, err error)
}

type ledgerKey struct{}

// WithLedger returns ctx carrying l for the runs started with it.
func WithLedger(ctx context.Context, l Ledger) context.Context {
	return context.WithValue(ctx, ledgerKey{}, l)
}

// From returns the ledger carried by ctx, or nil.
func From(ctx context.Context) Ledger {
	l, _ := ctx.Value(ledgerKey{}).(Ledger)
	return l
}
