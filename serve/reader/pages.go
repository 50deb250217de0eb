package reader

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// PageRequest selects one page of a collection.
type PageRequest struct {
	// TaskID is the task's public id.
	TaskID string
	// Attempt selects an archived attempt; 0 is the current one.
	Attempt int64
	// Limit is the page size: 0 means the default (100), above 256 is
	// clamped to 256, negative is INVALID_ARGUMENT.
	Limit int
	// Cursor continues a previous page ("" starts at the beginning).
	Cursor string
	// State filters node details (PENDING, RUNNING, SUCCEEDED, FAILED);
	// only node details accept it.
	State string
}

// EffectiveLimit applies the default and the hard cap to a requested limit.
func EffectiveLimit(n int) (int, error) {
	switch {
	case n < 0:
		return 0, errorf(read.ErrorCodeInvalidArgument, "limit must not be negative")
	case n == 0:
		return read.DefaultPageItems, nil
	case n > read.MaxPageItems:
		return read.MaxPageItems, nil
	}
	return n, nil
}

// pageState is the position a page read continues from.
type pageState struct {
	pageIndex, offset int64
	after             any
	seen              int64
}

// checkCursor verifies tok for this read and returns its payload; expired
// is true when the cursor's run or revision is retired (EXPIRED).
func (s *Service) checkCursor(tok string, t *target, coll read.Collection, filters [][]string, limit int) (c read.Cursor, expired bool, err error) {
	c, key, err := s.keys.open(tok)
	if err != nil {
		return nil, false, err
	}
	var (
		owner, run, collection string
		cri                    common.PublicRunIdentity
		lim, topo              int64
		dr                     *int64
		cf                     [][]string
	)
	switch x := c.(type) {
	case *read.NodeCursor:
		owner, run, collection, cri, lim, topo, cf = x.Owner, x.Run, x.Collection, x.RunIdentity, x.Limit, x.TopologyVersion, x.Filters
	case *read.EdgeCursor:
		owner, run, collection, cri, lim, topo, cf = x.Owner, x.Run, x.Collection, x.RunIdentity, x.Limit, x.TopologyVersion, x.Filters
	case *read.DetailCursor:
		owner, run, collection, cri, lim, topo, cf = x.Owner, x.Run, x.Collection, x.RunIdentity, x.Limit, x.TopologyVersion, x.Filters
		dr = &x.DetailRevision
	default:
		return nil, false, errorf(read.ErrorCodeInvalidCursor, "unknown cursor")
	}
	if cf == nil {
		cf = [][]string{}
	}
	switch {
	case owner != ownerTag(key, t.taskPK):
		return nil, false, errorf(read.ErrorCodeCursorMismatch, "cursor belongs to another task")
	case collection != string(coll):
		return nil, false, errorf(read.ErrorCodeCursorMismatch, "cursor belongs to collection %s", collection)
	case !slices.EqualFunc(cf, filters, slices.Equal[[]string]):
		return nil, false, errorf(read.ErrorCodeCursorMismatch, "cursor was issued for other filters")
	case lim != int64(limit):
		return nil, false, errorf(read.ErrorCodeCursorMismatch, "cursor was issued for limit %d", lim)
	case cri.AttemptNumber != t.attempt:
		return nil, false, errorf(read.ErrorCodeCursorMismatch, "cursor was issued for attempt %d", cri.AttemptNumber)
	}
	// Same task, attempt and request: a different run or revision means
	// the publication the cursor walked was retired.
	if t.sum == nil || run != runTag(key, t.identity()) || cri != t.public() || t.sum.TopologyVersion == nil || *t.sum.TopologyVersion != topo ||
		dr != nil && (t.sum.DetailRevision == nil || *t.sum.DetailRevision != *dr) {
		return nil, true, nil
	}
	return c, false, nil
}

// fitter admits items while the response stays within the 512 KiB cap,
// measured as the contract says (ASCII, sorted, default separators),
// keeping room for the largest next cursor.
type fitter struct {
	size int64
}

const cursorRoom = read.MaxCursorBytes + 2 - 4 // a quoted token replaces null

func newFitter(emptyPage any) (*fitter, error) {
	n, err := canonical.ASCIISize(emptyPage, true)
	if err != nil {
		return nil, fmt.Errorf("read: measuring page: %w", err)
	}
	return &fitter{size: n + cursorRoom}, nil
}

// admit reports whether item still fits and counts it when it does.
func (f *fitter) admit(item any, first bool) (bool, error) {
	n, err := canonical.ASCIISize(item, true)
	if err != nil {
		return false, fmt.Errorf("read: measuring item: %w", err)
	}
	if !first {
		n += 2 // ", "
	}
	if f.size+n > read.MaxResponseBytes {
		return false, nil
	}
	f.size += n
	return true, nil
}

// fitSizes returns how many leading items of the given measured sizes
// fit, counting them: the list's measured size is the sum of its items'
// plus ", " between them, so nothing is encoded again.
func fitSizes(f *fitter, sizes []int64) int {
	var total int64
	for i, n := range sizes {
		if i > 0 {
			n += 2
		}
		if f.size+total+n > read.MaxResponseBytes {
			f.size += total
			return i
		}
		total += n
	}
	f.size += total
	return len(sizes)
}

// decodedPage is a topology page's records, strictly decoded, with the
// size of each as the response measures it.
type decodedPage[T any] struct {
	recs  []T
	sizes []int64
}

// pageRecords checks that payload is what the writer stored (its digest
// equals the stored one: else CORRUPT) and returns its decoded records,
// from the cache when these bytes were decoded before.
func pageRecords[T any](s *Service, coll string, index int64, payload []byte, stored string, decode func([]byte) ([]T, error)) (*decodedPage[T], error) {
	d := canonical.DomainTopologyPage.Sum(payload).Hex()
	if d != stored {
		return nil, errorf(read.ErrorCodeCorrupt, "%s page %d does not match its digest", coll, index)
	}
	key := coll + ":" + d
	if v, ok := s.cache.get(key); ok {
		return v.(*decodedPage[T]), nil
	}
	recs, err := decode(payload)
	if err != nil {
		return nil, errorf(read.ErrorCodeCorrupt, "%s page %d does not validate: %v", coll, index, err)
	}
	p := &decodedPage[T]{recs: recs, sizes: make([]int64, len(recs))}
	// The sizes come from the stored text (one pass); a page of another
	// shape is measured record by record.
	if raw, ok := splitRecords(payload, coll); ok && len(raw) == len(recs) {
		for i, r := range raw {
			p.sizes[i] = spacedASCIISize(r)
		}
	} else {
		for i := range recs {
			if p.sizes[i], err = canonical.ASCIISize(&recs[i], true); err != nil {
				return nil, fmt.Errorf("read: measuring a %s record: %w", coll, err)
			}
		}
	}
	s.cache.put(key, int64(len(payload)), p)
	return p, nil
}

// cachedDetail is a node detail row, strictly decoded, and its size as
// the response measures it.
type cachedDetail struct {
	d    *detail.NodeDetail
	size int64
}

// detailRecord checks payload against its stored digest (else CORRUPT)
// and returns it decoded, from the cache when these bytes were decoded
// before; nodeID is the row's node id.
func (s *Service) detailRecord(nodeID string, payload []byte, stored string) (*cachedDetail, error) {
	d := canonical.DomainNodeDetail.Sum(payload).Hex()
	if d != stored {
		return nil, errorf(read.ErrorCodeCorrupt, "node detail %q does not match its digest", nodeID)
	}
	key := "detail:" + d
	if v, ok := s.cache.get(key); ok {
		c := v.(*cachedDetail)
		if c.d.NodeID != nodeID {
			return nil, errorf(read.ErrorCodeCorrupt, "node detail %q does not validate", nodeID)
		}
		return c, nil
	}
	nd, err := detail.DecodeNodeDetail(payload)
	if err != nil || nd.NodeID != nodeID {
		return nil, errorf(read.ErrorCodeCorrupt, "node detail %q does not validate", nodeID)
	}
	// The stored row is the record's canonical text: measured in one pass.
	c := &cachedDetail{d: nd, size: spacedASCIISize(payload)}
	s.cache.put(key, int64(len(payload)), c)
	return c, nil
}

// finalCount checks, at a collection's last page, the records returned in
// all against the retained counter.
func finalCount(seen, retained int64, what string) error {
	switch {
	case seen < retained:
		return errorf(read.ErrorCodeMissing, "%s: %d records returned, %d retained", what, seen, retained)
	case seen > retained:
		return errorf(read.ErrorCodeCorrupt, "%s: %d records returned, only %d retained", what, seen, retained)
	}
	return nil
}

type manifestRow struct {
	id                   string
	nodePages, edgePages int64
}

// run is the target's exact run identity.
func (t *target) run() store.Run {
	return store.Run{TaskPK: t.taskPK, Attempt: t.attempt, Gen: t.gen, RunID: t.runID}
}

// loadManifest reads the run's current manifest of the summary's topology
// version, in the statement that finds the run.
func loadManifest(ctx context.Context, q pgx.Tx, t *target) (*manifestRow, error) {
	var id *string
	var nodePages, edgePages *int64
	err := store.CurrentManifest(ctx, q, t.run(), *t.sum.TopologyVersion).Scan(&id, &nodePages, &edgePages)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errorf(read.ErrorCodeMissing, "the run's progress storage is missing")
	}
	if err != nil {
		return nil, fmt.Errorf("read: loading manifest: %w", err)
	}
	if id == nil {
		return nil, errorf(read.ErrorCodeMissing, "topology version %d is missing", *t.sum.TopologyVersion)
	}
	return &manifestRow{id: *id, nodePages: *nodePages, edgePages: *edgePages}, nil
}

// loadPage reads one linked topology page and its stored digest,
// refusing one over 1 MiB before loading it.
func loadPage(ctx context.Context, q pgx.Tx, manifestID, coll string, index int64) ([]byte, string, error) {
	var size int32
	var payload *string
	var digest string
	err := store.LinkedPage(ctx, q, manifestID, coll, index, MaxRecordBytes).Scan(&size, &payload, &digest)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", errorf(read.ErrorCodeMissing, "%s page %d is missing", coll, index)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read: loading page: %w", err)
	}
	if payload == nil {
		return nil, "", errorf(read.ErrorCodeCorrupt, "%s page %d is %d bytes, over %d", coll, index, size, MaxRecordBytes)
	}
	return []byte(*payload), digest, nil
}

// walk collects up to limit topology records from position st on, within
// the response and decoded-record caps. It returns the records, the
// position after them, and whether the collection has more.
func walk[T any](ctx context.Context, s *Service, q pgx.Tx, m *manifestRow, coll string, pages int64, st pageState, limit int,
	f *fitter, decode func([]byte) ([]T, error), after func(T, any) bool) ([]T, pageState, bool, error) {
	var items []T
	var sizes []int64
	var posAfter []pageState // the position after each item
	var loaded int64
	for st.pageIndex < pages && len(items) < limit {
		payload, digest, err := loadPage(ctx, q, m.id, coll, st.pageIndex)
		if err != nil {
			return nil, st, false, err
		}
		loaded += int64(len(payload))
		if loaded > MaxRecordBytes && len(items) > 0 {
			break
		}
		pg, err := pageRecords(s, coll, st.pageIndex, payload, digest, decode)
		if err != nil {
			return nil, st, false, err
		}
		recs := pg.recs
		if st.offset >= int64(len(recs)) {
			return nil, st, false, errorf(read.ErrorCodeCorrupt, "%s page %d has %d records, cursor offset %d", coll, st.pageIndex, len(recs), st.offset)
		}
		for page := st.pageIndex; st.pageIndex == page && len(items) < limit; {
			r := recs[st.offset]
			if st.after != nil && !after(r, st.after) {
				return nil, st, false, errorf(read.ErrorCodeCorrupt, "%s records out of order at page %d", coll, st.pageIndex)
			}
			items = append(items, r)
			sizes = append(sizes, pg.sizes[st.offset])
			st.after = r
			st.offset++
			if st.offset == int64(len(recs)) {
				st.pageIndex, st.offset = st.pageIndex+1, 0
			}
			posAfter = append(posAfter, st)
		}
	}
	k := fitSizes(f, sizes)
	if k == 0 && len(items) > 0 {
		return nil, st, false, errorf(read.ErrorCodeCorrupt, "one %s record does not fit a response", coll)
	}
	if k == 0 {
		return nil, st, st.pageIndex < pages, nil
	}
	st = posAfter[k-1]
	return items[:k], st, st.pageIndex < pages, nil
}

func (s *Service) pagePrelude(ctx context.Context, tx pgx.Tx, principal string, req PageRequest, coll read.Collection, filters [][]string) (*target, int, read.Cursor, bool, error) {
	t, err := s.load(ctx, tx, principal, req.TaskID, req.Attempt)
	if err != nil {
		return nil, 0, nil, false, err
	}
	limit, err := EffectiveLimit(req.Limit)
	if err != nil {
		return nil, 0, nil, false, err
	}
	if req.Cursor == "" {
		return t, limit, nil, false, nil
	}
	c, expired, err := s.checkCursor(req.Cursor, t, coll, filters, limit)
	return t, limit, c, expired, err
}

func (s *Service) pageCommon(t *target, expired bool) read.PageCommon {
	e := s.envelope(t)
	if expired {
		e.Availability, e.Complete = summary.DetailAvailabilityExpired, false
	}
	return read.PageCommon{SchemaVersion: 1, GeneratedAt: e.GeneratedAt, TaskID: e.TaskID, RunIdentity: e.RunIdentity,
		Publication: e.Publication, Availability: e.Availability, Complete: e.Complete, Schema: SchemaPage}
}

func pos(p []int64) (int64, int64) { return p[0], p[1] }

// topoSpec is what sets one topology collection's page apart.
type topoSpec[T any] struct {
	coll     read.Collection
	kind     string // the manifest's page collection
	what     string // the collection in messages
	pages    func(*manifestRow) int64
	retained func(*target) int64
	decode   func([]byte) ([]T, error)
	after    func(r T, after any) bool
	resume   func(read.Cursor) (after T, position []int64, seen int64)
	cursor   func(key []byte, t *target, limit int, last T, position []int64, seen int64) read.Cursor
	empty    func(read.PageCommon) any // the page without items, for the fitter
}

// topologyPage reads one page of a topology collection: the envelope, the
// items and the next cursor (nil at the end).
func topologyPage[T any](ctx context.Context, s *Service, principal string, req PageRequest, sp topoSpec[T]) (read.PageCommon, []T, *string, error) {
	if req.State != "" {
		return read.PageCommon{}, nil, nil, errorf(read.ErrorCodeInvalidArgument, "%s take no state filter", sp.what)
	}
	var pc read.PageCommon
	var items []T
	var next *string
	err := s.tx(ctx, func(tx pgx.Tx) error {
		t, limit, c, expired, err := s.pagePrelude(ctx, tx, principal, req, sp.coll, [][]string{})
		if err != nil {
			return err
		}
		pc, items, next = s.pageCommon(t, expired), nil, nil
		if expired || !readableAvail(t.avail) {
			return nil
		}
		m, err := loadManifest(ctx, tx, t)
		if err != nil {
			return err
		}
		var st pageState
		if c != nil {
			after, p, seen := sp.resume(c)
			st.pageIndex, st.offset = pos(p)
			st.after, st.seen = after, seen
		}
		f, err := newFitter(sp.empty(pc))
		if err != nil {
			return err
		}
		got, at, more, err := walk(ctx, s, tx, m, sp.kind, sp.pages(m), st, limit, f, sp.decode, sp.after)
		if err != nil {
			return err
		}
		items = got
		seen := st.seen + int64(len(got))
		if !more {
			return finalCount(seen, sp.retained(t), sp.what)
		}
		tok, err := s.keys.sign(sp.cursor(s.keys.keys[0], t, limit, got[len(got)-1], []int64{at.pageIndex, at.offset}, seen))
		if err != nil {
			return err
		}
		next = &tok
		return nil
	})
	if err != nil {
		return read.PageCommon{}, nil, nil, err
	}
	return pc, items, next, nil
}

// TopologyNodes reads one page of topology nodes in node_id order.
func (s *Service) TopologyNodes(ctx context.Context, principal string, req PageRequest) (*read.NodePage, error) {
	pc, items, next, err := topologyPage(ctx, s, principal, req, nodeTopology)
	if err != nil {
		return nil, err
	}
	out := nodePage(pc, append([]topology.Node{}, items...))
	out.ReturnedCount, out.NextCursor = int64(len(items)), next
	if err := out.Validate(); err != nil {
		return nil, errorf(read.ErrorCodeCorrupt, "node page does not validate: %v", err)
	}
	return out, nil
}

// TopologyEdges reads one page of topology edges in (source, target) order.
func (s *Service) TopologyEdges(ctx context.Context, principal string, req PageRequest) (*read.EdgePage, error) {
	pc, items, next, err := topologyPage(ctx, s, principal, req, edgeTopology)
	if err != nil {
		return nil, err
	}
	out := edgePage(pc, append([]topology.Edge{}, items...))
	out.ReturnedCount, out.NextCursor = int64(len(items)), next
	if err := out.Validate(); err != nil {
		return nil, errorf(read.ErrorCodeCorrupt, "edge page does not validate: %v", err)
	}
	return out, nil
}

func nodePage(pc read.PageCommon, items []topology.Node) *read.NodePage {
	return &read.NodePage{SchemaVersion: 1, GeneratedAt: pc.GeneratedAt, TaskID: pc.TaskID, RunIdentity: pc.RunIdentity,
		Publication: pc.Publication, Availability: pc.Availability, Complete: pc.Complete, Schema: SchemaPage,
		Collection: string(read.CollectionTopologyNodes), Items: items}
}

func edgePage(pc read.PageCommon, items []topology.Edge) *read.EdgePage {
	return &read.EdgePage{SchemaVersion: 1, GeneratedAt: pc.GeneratedAt, TaskID: pc.TaskID, RunIdentity: pc.RunIdentity,
		Publication: pc.Publication, Availability: pc.Availability, Complete: pc.Complete, Schema: SchemaPage,
		Collection: string(read.CollectionTopologyEdges), Items: items}
}

var nodeTopology = topoSpec[topology.Node]{
	coll: read.CollectionTopologyNodes, kind: "NODE", what: "topology nodes",
	pages:    func(m *manifestRow) int64 { return m.nodePages },
	retained: func(t *target) int64 { return t.sum.NodeCounts.RetainedTopology },
	decode: func(b []byte) ([]topology.Node, error) {
		p, err := topology.DecodeNodePage(b)
		if err != nil {
			return nil, err
		}
		return p.Records, nil
	},
	after: func(r topology.Node, after any) bool { return r.NodeID > after.(topology.Node).NodeID },
	resume: func(c read.Cursor) (topology.Node, []int64, int64) {
		nc := c.(*read.NodeCursor)
		return topology.Node{NodeID: nc.After}, nc.Position, nc.Seen
	},
	cursor: func(key []byte, t *target, limit int, last topology.Node, position []int64, seen int64) read.Cursor {
		return &read.NodeCursor{V: 1, Owner: ownerTag(key, t.taskPK), Run: runTag(key, t.identity()),
			RunIdentity: t.public(), SummaryRevision: t.sum.SummaryRevision, TopologyVersion: *t.sum.TopologyVersion,
			Limit: int64(limit), Collection: string(read.CollectionTopologyNodes), Order: "node_id_asc", Filters: [][]string{},
			After: last.NodeID, Position: position, Seen: seen}
	},
	empty: func(pc read.PageCommon) any { return nodePage(pc, []topology.Node{}) },
}

var edgeTopology = topoSpec[topology.Edge]{
	coll: read.CollectionTopologyEdges, kind: "EDGE", what: "topology edges",
	pages:    func(m *manifestRow) int64 { return m.edgePages },
	retained: func(t *target) int64 { return t.sum.EdgeCounts.RetainedTopology },
	decode: func(b []byte) ([]topology.Edge, error) {
		p, err := topology.DecodeEdgePage(b)
		if err != nil {
			return nil, err
		}
		return p.Records, nil
	},
	after: func(r topology.Edge, after any) bool {
		a := after.(topology.Edge)
		return r.Source > a.Source || r.Source == a.Source && r.Target > a.Target
	},
	resume: func(c read.Cursor) (topology.Edge, []int64, int64) {
		ec := c.(*read.EdgeCursor)
		return topology.Edge{Source: ec.After[0], Target: ec.After[1]}, ec.Position, ec.Seen
	},
	cursor: func(key []byte, t *target, limit int, last topology.Edge, position []int64, seen int64) read.Cursor {
		return &read.EdgeCursor{V: 1, Owner: ownerTag(key, t.taskPK), Run: runTag(key, t.identity()),
			RunIdentity: t.public(), SummaryRevision: t.sum.SummaryRevision, TopologyVersion: *t.sum.TopologyVersion,
			Limit: int64(limit), Collection: string(read.CollectionTopologyEdges), Order: "source_target_asc", Filters: [][]string{},
			After: []string{last.Source, last.Target}, Position: position, Seen: seen}
	},
	empty: func(pc read.PageCommon) any { return edgePage(pc, []topology.Edge{}) },
}

// NodeDetails reads one page of node details in stable node-key order,
// optionally only the nodes in one state.
func (s *Service) NodeDetails(ctx context.Context, principal string, req PageRequest) (*read.DetailPage, error) {
	filters := [][]string{}
	if req.State != "" {
		if !detail.NodeState(req.State).Valid() {
			return nil, errorf(read.ErrorCodeInvalidArgument, "state must be PENDING, RUNNING, SUCCEEDED or FAILED")
		}
		filters = [][]string{{"state", req.State}}
	}
	var out *read.DetailPage
	err := s.tx(ctx, func(tx pgx.Tx) error {
		t, limit, c, expired, err := s.pagePrelude(ctx, tx, principal, req, read.CollectionNodeDetails, filters)
		if err != nil {
			return err
		}
		pc := s.pageCommon(t, expired)
		out = &read.DetailPage{SchemaVersion: 1, GeneratedAt: pc.GeneratedAt, TaskID: pc.TaskID, RunIdentity: pc.RunIdentity,
			Publication: pc.Publication, Availability: pc.Availability, Complete: pc.Complete, Schema: SchemaPage,
			Collection: string(read.CollectionNodeDetails), Items: []detail.NodeDetail{}}
		if expired || !readableAvail(t.avail) || t.sum.DetailRevision == nil {
			return nil
		}
		var pk int64
		var counts [5]int64
		err = store.RunDetailCounts(ctx, tx, t.run()).Scan(&pk, &counts[0], &counts[1], &counts[2], &counts[3], &counts[4])
		if errors.Is(err, pgx.ErrNoRows) {
			return errorf(read.ErrorCodeMissing, "the run's progress storage is missing")
		}
		if err != nil {
			return fmt.Errorf("read: loading run counters: %w", err)
		}
		retained := counts[0]
		if req.State != "" {
			retained = counts[1+slices.Index(detail.NodeStateValues, detail.NodeState(req.State))]
		}
		after, seen := "", int64(0)
		if c != nil {
			dc := c.(*read.DetailCursor)
			after, seen = dc.After, dc.Seen
		}
		rows, err := store.DetailPage(ctx, tx, pk, after, limit+1, MaxRecordBytes, req.State)
		if err != nil {
			return fmt.Errorf("read: loading node details: %w", err)
		}
		type row struct {
			key, id, digest string
			size            int32
			payload         []byte
		}
		var rs []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.key, &r.id, &r.size, &r.payload, &r.digest); err != nil {
				return fmt.Errorf("read: scanning node detail: %w", err)
			}
			rs = append(rs, r)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read: loading node details: %w", err)
		}
		f, err := newFitter(out)
		if err != nil {
			return err
		}
		more := len(rs) > limit
		var loaded int64
		var cand []detail.NodeDetail
		var sizes []int64
		var keys []string
		for i, r := range rs {
			if i == limit {
				break
			}
			if r.payload == nil {
				return errorf(read.ErrorCodeCorrupt, "node detail %q is %d bytes, over %d", r.id, r.size, MaxRecordBytes)
			}
			loaded += int64(r.size)
			if loaded > MaxRecordBytes && i > 0 {
				more = true
				break
			}
			c, err := s.detailRecord(r.id, r.payload, r.digest)
			if err != nil {
				return err
			}
			if nodeKey(r.id) != r.key {
				return errorf(read.ErrorCodeCorrupt, "node detail %q does not validate", r.id)
			}
			cand = append(cand, *c.d)
			sizes = append(sizes, c.size)
			keys = append(keys, r.key)
		}
		k := fitSizes(f, sizes)
		if k == 0 && len(cand) > 0 {
			return errorf(read.ErrorCodeCorrupt, "one node detail does not fit a response")
		}
		if k < len(cand) {
			more = true
		}
		out.Items = append(out.Items, cand[:k]...)
		lastKey := ""
		if k > 0 {
			lastKey = keys[k-1]
		}
		out.ReturnedCount = int64(len(out.Items))
		seen += out.ReturnedCount
		if !more {
			return finalCount(seen, retained, "node details")
		}
		key := s.keys.keys[0]
		tok, err := s.keys.sign(&read.DetailCursor{V: 1, Owner: ownerTag(key, t.taskPK), Run: runTag(key, t.identity()),
			RunIdentity: t.public(), SummaryRevision: t.sum.SummaryRevision, TopologyVersion: *t.sum.TopologyVersion,
			Limit: int64(limit), Collection: string(read.CollectionNodeDetails), Order: "stable_node_key_asc",
			DetailRevision: *t.sum.DetailRevision, Filters: filters, After: lastKey, Seen: seen})
		if err != nil {
			return err
		}
		out.NextCursor = &tok
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := validateDetailPage(out); err != nil {
		return nil, errorf(read.ErrorCodeCorrupt, "detail page does not validate: %v", err)
	}
	return out, nil
}

// validateDetailPage validates a detail page against gen/read without
// validating its items again: each item was strictly decoded and validated
// against gen/detail when its bytes were first loaded (detailRecord; the
// cache is keyed by the digest of those bytes). The envelope is validated
// by the generated validator with the items left out, and the three rules
// that depend on the items (returned_count equals their number, items only
// from a readable publication, a next cursor only after a non-empty page)
// are checked here on the real page.
func validateDetailPage(out *read.DetailPage) error {
	env := *out
	env.Items, env.ReturnedCount, env.NextCursor = []detail.NodeDetail{}, 0, nil
	if err := env.Validate(); err != nil {
		return err
	}
	n := len(out.Items)
	switch {
	case out.ReturnedCount != int64(n):
		return errors.New("returned_count must equal the number of items")
	case n > 0 && !(readableAvail(out.Availability) && out.Publication.DetailRevision != nil):
		return errors.New("items need an AVAILABLE or TRUNCATED publication with its revision")
	case out.NextCursor != nil && n == 0:
		return errors.New("a next cursor follows a non-empty page")
	case out.NextCursor != nil && (*out.NextCursor == "" || len(*out.NextCursor) > read.MaxCursorBytes):
		return errors.New("next_cursor must be 1 to 2048 bytes")
	}
	return nil
}

// Node reads the detail of one node by id (an indexed lookup); found is
// false when the run has no detail for that node.
func (s *Service) Node(ctx context.Context, principal, taskID string, attempt int64, nodeID string) (*read.Node, error) {
	var out *read.Node
	err := s.tx(ctx, func(tx pgx.Tx) error {
		t, err := s.load(ctx, tx, principal, taskID, attempt)
		if err != nil {
			return err
		}
		if nodeID == "" || len(nodeID) > 256 {
			return errorf(read.ErrorCodeInvalidArgument, "node_id must be 1 to 256 bytes")
		}
		e := s.envelope(t)
		out = &read.Node{SchemaVersion: 1, GeneratedAt: e.GeneratedAt, TaskID: e.TaskID, RunIdentity: e.RunIdentity,
			Publication: e.Publication, Availability: e.Availability, Complete: e.Complete, Schema: SchemaNode}
		if !readableAvail(t.avail) || t.sum.DetailRevision == nil {
			return nil
		}
		var size *int32
		var payload []byte
		var digest *string
		err = store.NodeDetail(ctx, tx, t.run(), nodeKey(nodeID), MaxRecordBytes).Scan(&size, &payload, &digest)
		if errors.Is(err, pgx.ErrNoRows) {
			return errorf(read.ErrorCodeMissing, "the run's progress storage is missing")
		}
		if err != nil {
			return fmt.Errorf("read: loading node detail: %w", err)
		}
		if size == nil {
			return nil // no such node
		}
		if payload == nil {
			return errorf(read.ErrorCodeCorrupt, "node detail is %d bytes, over %d", *size, MaxRecordBytes)
		}
		c, err := s.detailRecord(nodeID, payload, *digest)
		if err != nil {
			return err
		}
		d := *c.d
		out.Found, out.Item = true, &d
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := out.Validate(); err != nil {
		return nil, errorf(read.ErrorCodeCorrupt, "node envelope does not validate: %v", err)
	}
	return out, nil
}
