package durable

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckQueueName: queue names at their length edges, and names with a
// control character (which break the one-line-per-task listings).
func TestCheckQueueName(t *testing.T) {
	for _, c := range []struct {
		name, q string
		ok      bool
	}{
		{"one character", "q", true},
		{"the default", DefaultQueue, true},
		{"128 characters", strings.Repeat("q", MaxQueueNameLen), true},
		{"128 multi-byte characters", strings.Repeat("é", MaxQueueNameLen), true},
		{"spaces and punctuation", "team a/reports-1", true},
		{"empty", "", false},
		{"129 characters", strings.Repeat("q", MaxQueueNameLen+1), false},
		{"newline", "a\nb", false},
		{"carriage return", "a\r", false},
		{"tab", "a\tb", false},
		{"NUL", "a\x00", false},
		{"C1 control", "a\u0085b", false},
		{"invalid UTF-8", "a\xff", false},
	} {
		err := CheckQueueName(c.q)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidOption)) {
			t.Errorf("%s (%q): %v, want ok %v (or ErrInvalidOption)", c.name, c.q, err, c.ok)
		}
		if _, nerr := (EnqueueOptions{Queue: c.q}).normalize(); c.q != "" && (nerr == nil) != c.ok {
			t.Errorf("%s: EnqueueOptions.normalize: %v, want ok %v", c.name, nerr, c.ok)
		}
	}
}
