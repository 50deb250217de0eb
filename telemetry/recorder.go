package telemetry

import (
	"sync/atomic"
	"time"
)

// Recorder receives the metrics the engines and the progress sinks
// record (leaves, map windows, progress publications). Package telemetry
// imports no metrics library, so that a program linking only the SDK (sdk
// → internal/inproc → telemetry) links none: the process that serves
// metrics installs one with SetRecorder. Package telemetry/prom is the
// Prometheus recorder; importing it installs it (a durable worker and
// rayflow serve do). Until then nothing is recorded.
//
// Label values are the closed sets of this package: engine ("local",
// "ray"), outcome (OutcomeSucceeded, OutcomeFailed; OutcomeOK,
// OutcomeError), sink (a sink kind such as "postgres") and artefact
// (ArtefactSummary, ArtefactTopology, ArtefactDetail). A Recorder is
// called concurrently and on hot paths (each leaf): it must not block.
type Recorder interface {
	// LeafSubmitted counts a leaf call started (local) or submitted (Ray).
	LeafSubmitted(engine string)
	// LeafFinished counts a leaf call's end (outcome succeeded, failed).
	LeafFinished(engine, outcome string)
	// MapWindowSlots adds delta slots of bounded map windows running now.
	MapWindowSlots(engine string, delta float64)
	// MapItemsInFlight adds delta items holding a window slot.
	MapItemsInFlight(engine string, delta float64)
	// Publication records a progress publication's latency by outcome (ok,
	// error).
	Publication(sink, outcome string, d time.Duration)
	// PublicationBytes records the canonical bytes an accepted
	// publication wrote of one artefact kind.
	PublicationBytes(sink, artefact string, n int)
}

// Artefact kinds of a progress publication's bytes (label values).
const (
	ArtefactSummary  = "summary"  // the summary record on the task row
	ArtefactTopology = "topology" // topology pages and the manifest
	ArtefactDetail   = "detail"   // node detail rows written
)

type recorderBox struct{ r Recorder }

var recorder atomic.Pointer[recorderBox]

// SetRecorder installs r as the process's recorder (nil: record
// nothing). Calls made before keep their recorder: a map window opened
// before closes on the recorder it opened on.
func SetRecorder(r Recorder) {
	if r == nil {
		recorder.Store(nil)
		return
	}
	recorder.Store(&recorderBox{r})
}

// CurrentRecorder returns the installed recorder (nil when none).
func CurrentRecorder() Recorder {
	if b := recorder.Load(); b != nil {
		return b.r
	}
	return nil
}

// MapWindow tracks one running bounded map's window (map window slots
// and items in flight, by engine). A zero or unbounded window (≤ 0), or
// no recorder, tracks nothing.
type MapWindow struct {
	r      Recorder
	engine string
	size   float64
}

// OpenMapWindow adds a map's window of size slots for engine.
func OpenMapWindow(engine string, size int) *MapWindow {
	r := CurrentRecorder()
	if size <= 0 || size > 1<<30 || r == nil {
		return &MapWindow{}
	}
	w := &MapWindow{r: r, engine: engine, size: float64(size)}
	r.MapWindowSlots(engine, w.size)
	return w
}

// ItemStarted and ItemDone move one item in and out of the window.
func (w *MapWindow) ItemStarted() {
	if w.r != nil {
		w.r.MapItemsInFlight(w.engine, 1)
	}
}

// ItemDone is ItemStarted's end.
func (w *MapWindow) ItemDone() {
	if w.r != nil {
		w.r.MapItemsInFlight(w.engine, -1)
	}
}

// Close removes the window's slots.
func (w *MapWindow) Close() {
	if w.r != nil {
		w.r.MapWindowSlots(w.engine, -w.size)
	}
}

// LeafCounters are one engine's leaf counters (on the recorder installed
// when they count).
type LeafCounters struct{ engine string }

// Leaves returns engine's leaf counters.
func Leaves(engine string) *LeafCounters { return &LeafCounters{engine} }

// Submitted counts a leaf call submitted.
func (l *LeafCounters) Submitted() {
	if r := CurrentRecorder(); r != nil {
		r.LeafSubmitted(l.engine)
	}
}

// Finished counts a leaf call's end (err nil: succeeded).
func (l *LeafCounters) Finished(err error) {
	r := CurrentRecorder()
	if r == nil {
		return
	}
	if err != nil {
		r.LeafFinished(l.engine, OutcomeFailed)
	} else {
		r.LeafFinished(l.engine, OutcomeSucceeded)
	}
}

// Outcomes of attempts, leaves and publications (label values).
const (
	OutcomeSucceeded  = "succeeded"
	OutcomeFailed     = "failed"
	OutcomeCancelled  = "cancelled"
	OutcomeLost       = "lost"
	OutcomeExpired    = "expired"
	OutcomeSuperseded = "superseded"
	OutcomeOK         = "ok"
	OutcomeError      = "error"
)
