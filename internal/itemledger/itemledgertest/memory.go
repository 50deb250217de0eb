// Package itemledgertest is an in-memory item ledger (itemledger.Ledger)
// for tests that run without PostgreSQL: it keeps entries like the store
// does (by scope and input digest, the first result of an input kept),
// counts its calls and can be told that its attempt lost the fence.
package itemledgertest

import (
	"context"
	"fmt"
	"sync"

	"github.com/rayflow/rayflow/internal/itemledger"
)

// Memory is an in-memory itemledger.Ledger, safe for concurrent use. Its
// zero value is an empty ledger.
type Memory struct {
	mu      sync.Mutex
	entries map[itemledger.Scope]map[[32]byte][]byte
	n       int
	lookups int
	records int
	asked   int
	fenced  bool
}

// Lookup returns the recorded results of those of inputs that have one.
func (m *Memory) Lookup(_ context.Context, s itemledger.Scope, inputs [][32]byte) (map[[32]byte][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lookups++
	m.asked += len(inputs)
	out := map[[32]byte][]byte{}
	kept := m.entries[s]
	for _, in := range inputs {
		if r, ok := kept[in]; ok {
			out[in] = r // never written again: a result is kept once
		}
	}
	return out, nil
}

// Record keeps the items' results (an input already recorded keeps its
// first result). After LoseFence it keeps nothing and returns an error
// wrapping itemledger.ErrFenceLost.
func (m *Memory) Record(_ context.Context, s itemledger.Scope, items []itemledger.Item) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records++
	if m.fenced {
		return 0, fmt.Errorf("itemledgertest: node %s: %w", s.Node, itemledger.ErrFenceLost)
	}
	if m.entries == nil {
		m.entries = map[itemledger.Scope]map[[32]byte][]byte{}
	}
	scope := m.entries[s]
	if scope == nil {
		scope = make(map[[32]byte][]byte, len(items))
		m.entries[s] = scope
	}
	kept := 0
	for _, it := range items {
		if _, ok := scope[it.Input]; ok {
			continue
		}
		scope[it.Input] = append([]byte(nil), it.Result...)
		kept++
	}
	m.n += kept
	return kept, nil
}

// LoseFence makes every later Record fail with itemledger.ErrFenceLost, as
// for an attempt a newer one took over.
func (m *Memory) LoseFence() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fenced = true
}

// Calls returns how many Lookup and Record calls the ledger had.
func (m *Memory) Calls() (lookups, records int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lookups, m.records
}

// Entries returns how many results the ledger keeps.
func (m *Memory) Entries() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

// ResetCalls zeroes the call counts (between two runs of a test).
func (m *Memory) ResetCalls() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lookups, m.records, m.asked = 0, 0, 0
}
