package pgstore

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// detailRow is one prepared node detail row.
type detailRow struct {
	key, nodeID string
	invocation  *string
	state       detail.NodeState
	events      int
	truncated   bool
	payload     []byte
	digest      string
}

// prepareDetail selects the stored detail rows (docs/contracts.md#node-detail): sorted by node id,
// only nodes of the retained topology, each ≤ RecordBytes, admitted while
// within DetailRows, DetailBytes and, with the topology, CombinedBytes;
// then only the RecentEvents most recent events run-wide are kept, the
// rows that lost events marked truncated.
func prepareDetail(ds []detail.NodeDetail, t *Topology, lim Limits) ([]detailRow, map[summary.TruncationReason]bool, error) {
	reasons := map[summary.TruncationReason]bool{}
	type ev struct {
		row, idx int
		e        detail.NodeRecentEvent
	}
	var admitted []detail.NodeDetail
	var all []ev
	for i := range ds {
		d := ds[i]
		if !t.Retained(d.NodeID) {
			continue
		}
		if len(admitted) == lim.DetailRows {
			reasons[summary.TruncationReasonDetailCountLimit] = true
			break
		}
		admitted = append(admitted, d)
		for j, e := range d.RecentEvents {
			all = append(all, ev{len(admitted) - 1, j, e})
		}
	}
	if len(all) > lim.RecentEvents {
		slices.SortFunc(all, func(a, b ev) int { // most recent first
			return -cmp.Or(strings.Compare(a.e.Timestamp, b.e.Timestamp), strings.Compare(admitted[a.row].NodeID, admitted[b.row].NodeID),
				strings.Compare(string(a.e.Event), string(b.e.Event)), strings.Compare(string(a.e.State), string(b.e.State)),
				strings.Compare(a.e.Label, b.e.Label), cmp.Compare(a.idx, b.idx))
		})
		keep := map[[2]int]bool{}
		for _, e := range all[:lim.RecentEvents] {
			keep[[2]int{e.row, e.idx}] = true
		}
		for r := range admitted {
			d := &admitted[r]
			kept := make([]detail.NodeRecentEvent, 0, len(d.RecentEvents))
			for j, e := range d.RecentEvents {
				if keep[[2]int{r, j}] {
					kept = append(kept, e)
				}
			}
			if len(kept) < len(d.RecentEvents) {
				d.RecentEvents, d.Truncated = kept, true
			}
		}
	}
	rows := make([]detailRow, 0, len(admitted))
	var bytes int64
	for i := range admitted {
		d := &admitted[i]
		if err := d.Validate(); err != nil {
			return nil, nil, fmt.Errorf("progressstore: node detail %q: %w", d.NodeID, err)
		}
		b, err := canonical.NoFold.Marshal(d)
		if err != nil {
			return nil, nil, fmt.Errorf("progressstore: node detail %q: %w", d.NodeID, err)
		}
		if len(b) > lim.RecordBytes {
			reasons[summary.TruncationReasonRecordSizeLimit] = true
			continue
		}
		if bytes+int64(len(b)) > lim.DetailBytes {
			reasons[summary.TruncationReasonDetailEncodedBytes] = true
			reasons[summary.TruncationReasonDetailDecodedBytes] = true
			break
		}
		if t.EncodedBytes+bytes+int64(len(b)) > lim.CombinedBytes {
			reasons[summary.TruncationReasonDetailEncodedBytes] = true
			reasons[summary.TruncationReasonDetailDecodedBytes] = true
			break
		}
		bytes += int64(len(b))
		r := detailRow{key: canonical.NodeKey(d.NodeID), nodeID: d.NodeID, state: d.State, events: len(d.RecentEvents),
			truncated: d.Truncated, payload: b, digest: canonical.DomainNodeDetail.Sum(b).Hex()}
		if d.InvocationIdentity != nil && d.InvocationIdentity.InvocationID != "" && len(d.InvocationIdentity.InvocationID) <= 128 {
			s := d.InvocationIdentity.InvocationID
			r.invocation = &s
		}
		rows = append(rows, r)
	}
	return rows, reasons, nil
}
