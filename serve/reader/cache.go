package reader

import (
	"container/list"
	"sync"
)

// DefaultCacheBytes bounds the decoded-record cache of a Service: the sum
// of the stored (encoded) bytes of the records it holds.
const DefaultCacheBytes = 32 << 20

// recordCache keeps decoded, validated records by the content digest of
// their stored bytes (least recently used out first, within a byte
// budget). The key is computed from the bytes a read actually loaded, so
// a hit returns exactly what strictly decoding those bytes returns: a
// record is validated against its gen/ type once per content, not once
// per read. Entries are shared and must not be modified.
type recordCache struct {
	mu   sync.Mutex
	max  int64
	used int64
	ll   *list.List
	m    map[string]*list.Element
}

type cacheEntry struct {
	key  string
	cost int64
	val  any
}

func newRecordCache(maxBytes int64) *recordCache {
	return &recordCache{max: maxBytes, ll: list.New(), m: map[string]*list.Element{}}
}

func (c *recordCache) get(key string) (any, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(e)
	return e.Value.(*cacheEntry).val, true
}

func (c *recordCache) put(key string, cost int64, val any) {
	if c == nil || cost > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; ok {
		return
	}
	c.m[key] = c.ll.PushFront(&cacheEntry{key: key, cost: cost, val: val})
	c.used += cost
	for c.used > c.max {
		old := c.ll.Back()
		ent := old.Value.(*cacheEntry)
		c.ll.Remove(old)
		delete(c.m, ent.key)
		c.used -= ent.cost
	}
}

// len is the number of cached records (tests).
func (c *recordCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
