package program

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sort"
	"sync"

	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// itemCodeDomain separates a resumable map's item code identity from
// every other SHA-256 rayflow computes.
const itemCodeDomain = "rayflow.item-code.v1\x00"

// unknownBuild stands for the build's code identity when the caller does
// not know it (Compile): a fresh random value per process, so an
// unversioned step's items are reused only within this process.
var unknownBuild = sync.OnceValue(func() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "process:" + hex.EncodeToString(b[:])
})

// stepToken is one step's part of an item code identity: its callable's
// symbol and its declared version, or the build's code identity when it
// declares none.
func stepToken(s *flowgraph.Step, build string) string {
	if s == nil {
		return "missing"
	}
	if s.Version != "" {
		return "step:" + s.Callable.Name + "\x00version:" + s.Version
	}
	return "step:" + s.Callable.Name + "\x00build:" + build
}

// itemCode is the domain-separated SHA-256 of the sorted step tokens.
func itemCode(tokens []string) [32]byte {
	sorted := append([]string(nil), tokens...)
	sort.Strings(sorted)
	h := sha256.New()
	h.Write([]byte(itemCodeDomain))
	var n [8]byte
	for _, t := range sorted {
		binary.BigEndian.PutUint64(n[:], uint64(len(t)))
		h.Write(n[:])
		h.Write([]byte(t))
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// itemCodes sets the ItemCode of every resumable map under n, whose
// items depend on the steps of upstream (tokens), and returns the tokens
// of n's own steps (a map's body included; a fold's reducer and an output
// preview do not change a step's result, and what they feed downstream
// reaches a later map through its items' inputs, whose digests are keyed
// anyway).
func itemCodes(n *Node, upstream []string, build string) (own []string) {
	if n.Missing {
		return nil
	}
	switch n.Kind {
	case flowgraph.KindStep:
		return []string{stepToken(n.Step, build)}
	case flowgraph.KindMap:
		for _, c := range n.Children {
			own = append(own, itemCodes(c, upstream, build)...)
		}
		if n.Map != nil && n.Map.Resume != nil {
			n.ItemCode = itemCode(append(append([]string(nil), upstream...), own...))
		}
		return own
	case flowgraph.KindGroup:
		for _, c := range n.Children {
			own = append(own, itemCodes(c, upstream, build)...)
		}
		return own
	default: // a chain: each child depends on the ones before it
		deps := upstream
		for _, c := range n.Children {
			mine := itemCodes(c, deps, build)
			deps = append(append([]string(nil), deps...), mine...)
			own = append(own, mine...)
		}
		return own
	}
}
