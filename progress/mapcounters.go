package progress

import (
	"sync"
	"sync/atomic"
)

// A bounded map reports its counters once per finished item (Run.Map),
// which for a large map is the hottest call of a run. Run.Map therefore
// only stores the counters in the map's mapSlot, with a few atomic
// operations; the map_progress event that makes them visible in the
// Collector is built and ingested by fold:
//
//   - at once for the map's first report (the node becomes RUNNING with
//     the time its first item finished, as before coalescing) and for its
//     final one (the map failed, or its input is exhausted and every item
//     finished), which also settles the node: the final counts are exact;
//   - otherwise at most once per flush interval (the Run's publication
//     loop folds every changed map before it publishes) and whenever the
//     state is read (Snapshot, Final, Finish).
//
// So the events of a map are coalesced by the reporting interval while its
// final state is the same as if every report had become an event.

// mapSlot is one map node's latest counters and what was last folded into
// the Collector.
type mapSlot struct {
	node, label string

	// The latest counters. Each only grows (storeMax), so racing reports
	// keep the newest; load reads exhausted, then completed, then
	// admitted, the reverse of the order store writes them, so it never
	// sees more completed items than admitted ones, nor an exhausted input
	// with items still to be admitted.
	admitted, completed atomic.Int64
	reused              atomic.Int64 // completed items reused from a ledger (a resumable map)
	exhausted           atomic.Bool
	begun               atomic.Bool // the first counters were folded

	mu     sync.Mutex // serializes folds: the events reach the Collector in order
	folded mapState   // the counters of the last folded event
}

// mapState is one set of map counters as a map_progress event carries them.
type mapState struct {
	admitted, completed, reused int64
	exhausted                   bool
}

// storeMax raises v to x (it never lowers it).
func storeMax(v *atomic.Int64, x int64) {
	for {
		cur := v.Load()
		if x <= cur || v.CompareAndSwap(cur, x) {
			return
		}
	}
}

// store records p (the hot path: no allocation, no lock).
func (s *mapSlot) store(p MapCounters) {
	storeMax(&s.admitted, int64(p.Admitted))
	storeMax(&s.completed, int64(p.Completed))
	if p.Reused > 0 {
		storeMax(&s.reused, int64(p.Reused))
	}
	if p.Exhausted && !s.exhausted.Load() {
		s.exhausted.Store(true)
	}
}

// load reads the latest counters (see the field order above).
func (s *mapSlot) load() mapState {
	ex := s.exhausted.Load()
	c := s.completed.Load()
	return mapState{admitted: s.admitted.Load(), completed: c, reused: min(s.reused.Load(), c), exhausted: ex}
}

// fold ingests the slot's latest counters as a map_progress event: always
// for the first fold and for final (the map's last report, then settled
// with its completed or failed event), otherwise only when they changed
// since the last fold.
func (r *Run) fold(s *mapSlot, final *MapCounters) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.begun.Load()
	st := s.load()
	if !first && final == nil && st == s.folded {
		return
	}
	s.begun.Store(true)
	s.folded = st
	if b, ev, err := r.enc.mapProgressEvent(s.node, s.label, st.admitted, st.completed, st.reused, st.exhausted); err == nil {
		r.col.ingestOwn(b, ev)
	}
	switch {
	case final == nil:
	case final.Failed:
		if b, ev, err := r.enc.failedEv(s.node, s.label, "the map failed"); err == nil {
			r.col.ingestOwn(b, ev)
		}
	case final.Exhausted && final.InFlight == 0 && final.Completed == final.Admitted:
		if b, ev, err := r.enc.completedEv(s.node, s.label); err == nil {
			r.col.ingestOwn(b, ev)
		}
	}
}

// flushMaps folds every map whose counters changed since its last fold.
func (r *Run) flushMaps() {
	if !r.Full() || r.col == nil {
		return
	}
	for _, s := range r.slots {
		if s.begun.Load() {
			r.fold(s, nil)
		}
	}
}
