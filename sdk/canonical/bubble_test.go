package canonical_test

import (
	"testing"
	"testing/synctest"

	"github.com/rayflow/rayflow/sdk/canonical"
)

// bubbleNode is a recursive type no other test encodes, so its encoder is
// first built inside the bubble below.
type bubbleNode struct {
	Name string       `json:"name"`
	Kids []bubbleNode `json:"kids,omitempty"`
}

// The encoder cache is process-wide: an encoder first built inside a
// synctest bubble (a test of the application's, or of rayflow's) must
// serve every goroutine afterwards. The cache used to publish recursive
// types' encoders behind a sync.WaitGroup; a WaitGroup added to inside a
// bubble crashes the runtime when it is waited on from outside (seen as a
// nil dereference in internal/synctest under a parallel test).
func TestEncoderBuiltInBubbleServesEveryone(t *testing.T) {
	v := bubbleNode{Name: "a", Kids: []bubbleNode{{Name: "b", Kids: []bubbleNode{{Name: "c"}}}}}
	const want = `{"kids":[{"kids":[{"name":"c"}],"name":"b"}],"name":"a"}`
	synctest.Test(t, func(t *testing.T) {
		// Built here; the recursive field is empty, so the indirection that
		// recursion goes through is first called outside the bubble.
		if got, err := canonical.Marshal(bubbleNode{Name: "z"}); err != nil || string(got) != `{"name":"z"}` {
			t.Fatalf("in the bubble: %s, %v", got, err)
		}
	})
	if got, err := canonical.Marshal(v); err != nil || string(got) != want {
		t.Fatalf("outside: %s, %v", got, err)
	}
	done := make(chan error)
	go func() { _, err := canonical.Marshal(v); done <- err }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
