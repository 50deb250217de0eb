package durable

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/rayflow/rayflow/internal/store"
)

// Bounds of fair admission (docs/durable.md#fair-admission).
const (
	// MaxConcurrencyKeyBytes bounds a concurrency key.
	MaxConcurrencyKeyBytes = 200
	// MaxPerKeyRunning bounds QueueLimits.PerKeyRunning and Burst.
	MaxPerKeyRunning = 1_000_000
	// MaxStartsPerSecond bounds QueueLimits.StartsPerSecond.
	MaxStartsPerSecond = 1_000_000
)

// CheckConcurrencyKey refuses a key no task can have: 1 to
// MaxConcurrencyKeyBytes bytes of valid UTF-8, no control character. The
// error wraps ErrInvalidOption.
func CheckConcurrencyKey(k string) error {
	if len(k) < 1 || len(k) > MaxConcurrencyKeyBytes || !utf8.ValidString(k) {
		return fmt.Errorf("%w: concurrency key of %d bytes (1–%d bytes of UTF-8)", ErrInvalidOption, len(k), MaxConcurrencyKeyBytes)
	}
	if strings.ContainsFunc(k, unicode.IsControl) {
		return fmt.Errorf("%w: concurrency key %q has a control character", ErrInvalidOption, k)
	}
	return nil
}

// QueueLimits are a queue's admission limits; a zero field is no limit.
type QueueLimits struct {
	// PerKeyRunning bounds the running (and cancelling) tasks of each
	// concurrency key (1–MaxPerKeyRunning). Tasks without a key are not
	// bounded by it.
	PerKeyRunning int `json:"per_key_running,omitempty"`
	// StartsPerSecond bounds the tasks the queue's workers start per
	// second, together (0 < r ≤ MaxStartsPerSecond): a token bucket that
	// refills at this rate up to Burst tokens, one token per start.
	StartsPerSecond float64 `json:"starts_per_second,omitempty"`
	// Burst is the bucket's size (1–MaxPerKeyRunning; default: the rate
	// rounded up). Only with StartsPerSecond.
	Burst int `json:"burst,omitempty"`
}

// normalize checks l and fills Burst's default.
func (l QueueLimits) normalize() (QueueLimits, error) {
	if l.PerKeyRunning < 0 || l.PerKeyRunning > MaxPerKeyRunning {
		return l, &OptionError{Option: "PerKeyRunning", Err: fmt.Errorf("%w: per-key running limit %d outside 1…%d (0: none)",
			ErrInvalidOption, l.PerKeyRunning, MaxPerKeyRunning)}
	}
	if math.IsNaN(l.StartsPerSecond) || l.StartsPerSecond < 0 || l.StartsPerSecond > MaxStartsPerSecond {
		return l, &OptionError{Option: "StartsPerSecond", Err: fmt.Errorf("%w: starts per second %v outside (0, %d] (0: none)",
			ErrInvalidOption, l.StartsPerSecond, MaxStartsPerSecond)}
	}
	if l.Burst < 0 || l.Burst > MaxPerKeyRunning {
		return l, &OptionError{Option: "Burst", Err: fmt.Errorf("%w: burst %d outside 1…%d", ErrInvalidOption, l.Burst, MaxPerKeyRunning)}
	}
	if l.StartsPerSecond == 0 {
		if l.Burst != 0 {
			return l, &OptionError{Option: "Burst", Err: fmt.Errorf("%w: a burst needs a start rate", ErrInvalidOption)}
		}
		return l, nil
	}
	if l.Burst == 0 {
		l.Burst = int(math.Ceil(l.StartsPerSecond))
	}
	return l, nil
}

// SetQueueLimits sets queue's admission limits (the zero QueueLimits
// removes them) and wakes its workers. The limits hold for every claim
// that starts after SetQueueLimits returns: a per-key limit exactly (a
// key never runs more, however many workers claim at once), a start rate
// as a token bucket that starts full. Lowering a per-key limit stops
// nothing that runs: the key's next task starts when it is below the new
// limit.
func (c *Client) SetQueueLimits(ctx context.Context, queue string, l QueueLimits) error {
	if err := CheckQueueName(queue); err != nil {
		return &OptionError{Option: "Queue", Err: err}
	}
	l, err := l.normalize()
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if l == (QueueLimits{}) {
			if err := store.DeleteQueueLimits(ctx, tx, queue); err != nil {
				return err
			}
		} else if err := store.SetQueueLimits(ctx, tx, queue, nullInt(l.PerKeyRunning), nullFloat(l.StartsPerSecond), nullInt(l.Burst)); err != nil {
			return err
		}
		return store.Notify(ctx, tx, "q:"+queue)
	})
}

// QueueStatus is a queue's limits and admission counts (Client.Queue).
type QueueStatus struct {
	Queue  string      `json:"queue"`
	Limits QueueLimits `json:"limits"`
	// Tokens is the start-rate bucket's tokens now (with a rate).
	Tokens float64 `json:"tokens,omitempty"`
	// Queued and Running count the queue's tasks (Running with
	// CANCELLING); KeysRunning the keys with a running task, KeysAtLimit
	// those at their per-key limit.
	Queued      int64 `json:"queued"`
	Running     int64 `json:"running"`
	KeysQueued  int64 `json:"keys_queued"`
	KeysRunning int64 `json:"keys_running"`
	KeysAtLimit int64 `json:"keys_at_limit"`
}

// Queue returns queue's limits and admission counts (zero limits for a
// queue that has none).
func (c *Client) Queue(ctx context.Context, queue string) (*QueueStatus, error) {
	if err := CheckQueueName(queue); err != nil {
		return nil, &OptionError{Option: "Queue", Err: err}
	}
	st := &QueueStatus{Queue: queue}
	var perKey, burst *int
	var rate, tokens *float64
	err := store.QueueStatus(ctx, c.pool, queue).Scan(&perKey, &rate, &burst, &tokens, &st.Queued, &st.Running,
		&st.KeysQueued, &st.KeysRunning, &st.KeysAtLimit)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	if perKey != nil {
		st.Limits.PerKeyRunning = *perKey
	}
	if rate != nil {
		st.Limits.StartsPerSecond = *rate
	}
	if burst != nil {
		st.Limits.Burst = *burst
	}
	if tokens != nil {
		st.Tokens = *tokens
	}
	return st, nil
}

func nullInt(v int) *int {
	if v == 0 {
		return nil
	}
	return &v
}

func nullFloat(v float64) *float64 {
	if v == 0 {
		return nil
	}
	return &v
}
