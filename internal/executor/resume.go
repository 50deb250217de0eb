package executor

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"time"

	"github.com/rayflow/rayflow/internal/itemledger"
)

// inputDigestDomain separates an item's input digest from every other
// SHA-256 rayflow computes.
const inputDigestDomain = "rayflow.item-input.v1\x00"

// InputDigest is the digest an item ledger keys an item by: the
// domain-separated SHA-256 of the item's encoded input (the codec bytes
// the backend sends).
func InputDigest(encoded []byte) [32]byte {
	var buf [256]byte
	return sha256.Sum256(append(append(buf[:0], inputDigestDomain...), encoded...))
}

// MaxLedgerChunk bounds a resumable map's ledger chunk: the items one
// Lookup asks for and the finished items one Record keeps.
const MaxLedgerChunk = 1024

// finalFlushTimeout bounds the Record of a failed or cancelled map's last
// finished items.
const finalFlushTimeout = 5 * time.Second

// Resume makes a map resumable (Limits.Resume): Run looks the items up in
// Ledger before running them and records the results of those it runs.
type Resume struct {
	Ledger itemledger.Ledger
	Scope  itemledger.Scope
	// MaxResultBytes is the largest encoded result recorded (≤ 0: no
	// cap); a bigger one is not recorded and its item runs next time.
	MaxResultBytes int
}

// Resumer is what a resumable map's backend adds to Backend: the encoded
// bytes of its items' inputs and results, and a recorded result turned
// back into an item's result. Run uses it only when Limits.Resume is set
// and the backend implements it.
type Resumer[In, Out any] interface {
	// Input returns an item's encoded input (the bytes the backend would
	// send for it).
	Input(in In) ([]byte, error)
	// Result returns item index's encoded result, before the sink takes
	// it.
	Result(ctx context.Context, index int, out Out) ([]byte, error)
	// Reuse returns item index's result from its recorded encoded
	// result, as if the item had run and returned it.
	Reuse(ctx context.Context, index int, result []byte) (Out, error)
}

// ahead is an item read ahead of the window and looked up.
type ahead[In any] struct {
	v      In
	digest [32]byte
	keyed  bool   // digest is set (the input encoded)
	result []byte // the recorded result (hit)
	hit    bool
}

// resumeState is a resumable map's ledger work in Run: items are read
// ahead a chunk at a time and looked up in one Lookup; finished items'
// results are recorded a chunk at a time (and when the map ends).
type resumeState[In, Out any] struct {
	cfg   *Resume
	r     Resumer[In, Out]
	chunk int

	queue  []ahead[In]
	qi     int
	ended  bool  // read1 reported the end or an error
	endErr error // the input's error, reported after the queue
	pulled int   // items read from the input

	digests map[int][32]byte // started items' digests, by index
	pending []itemledger.Item

	// One Record at a time runs in the background while the map goes on:
	// recording is the ledger's (a database statement's) latency, which
	// the items need not wait for. recorded gets its outcome.
	recording bool
	recorded  chan error
}

// newResume returns the map's resume state, or nil when the map is not
// resumable or its backend cannot resume.
func newResume[In, Out any](lim Limits, b Backend[In, Out], window int) *resumeState[In, Out] {
	if lim.Resume == nil || lim.Resume.Ledger == nil {
		return nil
	}
	r, ok := b.(Resumer[In, Out])
	if !ok {
		return nil
	}
	return &resumeState[In, Out]{cfg: lim.Resume, r: r, chunk: min(window, MaxLedgerChunk), digests: map[int][32]byte{},
		recorded: make(chan error, 1)}
}

// next returns the next item: from the queue, or after reading and
// looking up the next chunk (at most limit items; ≤ 0: no limit).
func (s *resumeState[In, Out]) next(ctx context.Context, read1 func() (In, bool, error), limit int) (ahead[In], bool, error) {
	if s.qi == len(s.queue) {
		if s.ended {
			return ahead[In]{}, false, s.endErr
		}
		s.fill(ctx, read1, limit)
		if s.qi == len(s.queue) {
			return ahead[In]{}, false, s.endErr
		}
	}
	a := s.queue[s.qi]
	s.queue[s.qi] = ahead[In]{}
	s.qi++
	return a, true, nil
}

// fill reads up to a chunk of items and looks them up in one Lookup.
func (s *resumeState[In, Out]) fill(ctx context.Context, read1 func() (In, bool, error), limit int) {
	s.queue, s.qi = s.queue[:0], 0
	n := s.chunk
	if limit > 0 {
		n = min(n, limit-s.pulled)
	}
	var inputs [][32]byte
	for len(s.queue) < n {
		v, ok, err := read1()
		if err != nil || !ok {
			s.ended, s.endErr = true, err
			break
		}
		s.pulled++
		a := ahead[In]{v: v}
		if b, err := s.r.Input(v); err == nil {
			a.digest, a.keyed = InputDigest(b), true
			inputs = append(inputs, a.digest)
		}
		s.queue = append(s.queue, a)
	}
	if len(inputs) == 0 {
		return
	}
	found, err := s.cfg.Ledger.Lookup(ctx, s.cfg.Scope, inputs)
	if err != nil {
		slog.WarnContext(ctx, "rayflow: item ledger lookup failed; the items run", "node", s.cfg.Scope.Node, "items", len(inputs), "err", err)
		return
	}
	for i := range s.queue {
		if a := &s.queue[i]; a.keyed {
			a.result, a.hit = found[a.digest]
		}
	}
}

// started notes a started item's digest, to record its result.
func (s *resumeState[In, Out]) started(index int, a ahead[In]) {
	if a.keyed {
		s.digests[index] = a.digest
	}
}

// encode returns item index's encoded result for the ledger, or nil when
// it cannot be kept (it reruns next time). Workers call it, in parallel.
func (s *resumeState[In, Out]) encode(ctx context.Context, index int, out Out) []byte {
	b, err := s.r.Result(ctx, index, out)
	if err != nil {
		slog.WarnContext(ctx, "rayflow: an item's result could not be encoded for the item ledger; it reruns next time", "node", s.cfg.Scope.Node, "index", index, "err", err)
		return nil
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

// finished keeps item index's encoded result for the next Record (unless
// there is none or it is over the cap) and records a full chunk. It
// returns an error only when the attempt lost its fence.
func (s *resumeState[In, Out]) finished(ctx context.Context, index int, enc []byte) error {
	if err := s.poll(); err != nil {
		return err
	}
	d, ok := s.digests[index]
	if !ok {
		return nil
	}
	delete(s.digests, index)
	if enc == nil || s.cfg.MaxResultBytes > 0 && len(enc) > s.cfg.MaxResultBytes {
		return nil // not encodable, or over the map's cap: not kept, the item reruns next time
	}
	s.pending = append(s.pending, itemledger.Item{Input: d, Result: enc})
	if len(s.pending) < s.chunk {
		return nil
	}
	return s.flush(ctx)
}

// flush starts recording the pending results in one Record, in the
// background, once the previous Record has returned. It returns an error
// only when the attempt lost its fence (reported by a Record).
func (s *resumeState[In, Out]) flush(ctx context.Context) error {
	if err := s.wait(); err != nil {
		return err
	}
	if len(s.pending) == 0 {
		return nil
	}
	items := s.pending
	s.pending = nil
	s.recording = true
	// Not the map's context: a Record under way when the map fails still
	// keeps what succeeded (bounded by finalFlushTimeout).
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalFlushTimeout)
	go func() {
		defer cancel()
		_, err := s.cfg.Ledger.Record(rctx, s.cfg.Scope, items)
		if err != nil && !errors.Is(err, itemledger.ErrFenceLost) {
			slog.WarnContext(rctx, "rayflow: item ledger record failed; the items rerun next time", "node", s.cfg.Scope.Node, "items", len(items), "err", err)
			err = nil
		}
		s.recorded <- err
	}()
	return nil
}

// wait waits for the Record under way, if any, and returns its error
// (only a lost fence).
func (s *resumeState[In, Out]) wait() error {
	if !s.recording {
		return nil
	}
	s.recording = false
	return <-s.recorded
}

// poll takes the outcome of a Record that has returned, without waiting.
func (s *resumeState[In, Out]) poll() error {
	if !s.recording {
		return nil
	}
	select {
	case err := <-s.recorded:
		s.recording = false
		return err
	default:
		return nil
	}
}

// flushLast records the map's last results and waits for every Record.
func (s *resumeState[In, Out]) flushLast(ctx context.Context) error {
	if err := s.flush(ctx); err != nil {
		return err
	}
	return s.wait()
}

// flushAfter records what a failed or cancelled map finished and waits
// for it (its errors do not matter: the map fails anyway).
func (s *resumeState[In, Out]) flushAfter(parent context.Context) {
	_ = s.flushLast(parent)
	_ = s.wait()
}
