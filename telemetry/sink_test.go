package telemetry_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/telemetry"
)

// capture is a Recorder that keeps the publication calls.
type capture struct {
	mu    sync.Mutex
	calls []string
}

func (c *capture) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, s)
}

func (c *capture) LeafSubmitted(string)                        {}
func (c *capture) LeafFinished(string, string)                 {}
func (c *capture) MapWindowSlots(string, float64)              {}
func (c *capture) MapItemsInFlight(string, float64)            {}
func (c *capture) Publication(sink, o string, _ time.Duration) { c.add("pub " + sink + " " + o) }
func (c *capture) PublicationBytes(sink, a string, n int) {
	c.add("bytes " + sink + " " + a + " " + string(rune('0'+n)))
}

// ObserveSink records one latency per publication and, for an accepted
// one, one size per artefact kind it wrote (none of a kind it did not
// write, none at all for a refused one).
func TestObserveSinkBytesByArtefact(t *testing.T) {
	c := &capture{}
	prev := telemetry.CurrentRecorder()
	telemetry.SetRecorder(c)
	t.Cleanup(func() { telemetry.SetRecorder(prev) })
	var fail bool
	var size telemetry.PublishedBytes
	s := telemetry.ObserveSink("pg", progress.SinkFunc(func(context.Context, *progress.Publication) error {
		if fail {
			return errors.New("refused")
		}
		return nil
	}), func(*progress.Publication) telemetry.PublishedBytes { return size })
	ctx := context.Background()
	size = telemetry.PublishedBytes{Summary: 1, Topology: 2, Detail: 3}
	_ = s.Publish(ctx, &progress.Publication{})
	size = telemetry.PublishedBytes{Summary: 4}
	_ = s.Publish(ctx, &progress.Publication{})
	fail = true
	_ = s.Publish(ctx, &progress.Publication{})
	want := []string{"pub pg ok", "bytes pg summary 1", "bytes pg topology 2", "bytes pg detail 3",
		"pub pg ok", "bytes pg summary 4", "pub pg error"}
	if !slices.Equal(c.calls, want) {
		t.Fatalf("recorded %q\nwant     %q", c.calls, want)
	}
}
