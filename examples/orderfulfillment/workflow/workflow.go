// Package orderflow is the order-fulfillment showcase of the reference
// system's test project (docs/serve.md#enqueue-routes-and-the-showcase-workflows),
// importable so that
// `rayflow worker`, `rayflow serve` and the Ray leaf process find it by
// name. It builds one order, validates each item, joins customer and
// inventory context, splits reservation preparation from commercial
// analysis, joins the decision inputs, reserves each item, decides, fans
// out to primary, audit and notification sinks, and finalizes:
//
//	0.0  receive_order
//	0.1  group(
//	       0.1.g0  chain(0.1.g0.0 build_order_batch, 0.1.g0.1 map(validate_item), 0.1.g0.2 summarize_validation),
//	       0.1.g1  chain(0.1.g1.0 group(0.1.g1.0.g0 load_customer, 0.1.g1.0.g1 customer_history), 0.1.g1.1 score_customer),
//	       0.1.g2  load_inventory,
//	       0.1.g3  load_shipping)
//	0.2  join_order_inputs
//	0.3  group(
//	       0.3.g0  prepare_reservation,
//	       0.3.g1  chain(0.3.g1.0 group(0.3.g1.0.g0 price_order, 0.3.g1.0.g1 assess_risk), 0.3.g1.1 recommend))
//	0.4  join_decision_inputs
//	0.5  map(reserve_inventory)        item n runs as 0.5.m<n>
//	0.6  decide_fulfillment
//	0.7  group(0.7.g0 write_primary, 0.7.g1 write_audit, 0.7.g2 send_notification)
//	0.8  finalize_order
//
// # Counts: rayflow's topology and the seed's
//
// rayflow's stored topology has one node per step and one node per map (a
// map's items are counted on the map node: admitted, done, in flight, per
// state; they are never topology nodes), so every run of this workflow
// retains exactly 21 nodes and 28 edges in 12 longest-path layers
// (Nodes, Edges, Layers), whatever its item count. The seed's test project
// expands each of its two item maps into one node per item (0.5.m0, 0.5.m1,
// …) with one incoming and one outgoing edge each, and no map node: with
// one item the two models coincide (21 nodes, 28 edges, 12 layers; the map
// node stands where the single item node stands), and with n items the
// seed counts 21+2(n−1) nodes and 28+4(n−1) edges: 25 and 36 for the
// default three items (SeedCounts). The tests check both against the
// stored publication: the topology counts directly, the seed counts from
// the topology plus the item counts of the two map nodes' detail.
//
// # Failures
//
// Request.FailureStage names one step (its label, e.g. reserve_inventory);
// that step fails with a *StageFailure, deterministically. For the two map
// stages FailureItem picks the item (reserve_inventory with item 0 fails
// 0.5.m0 only: the decision, the three sinks and the finalizer stay
// pending, while the commercial analysis has already succeeded, since the
// reservation map runs after it).
package orderflow

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rayflow/rayflow/sdk"
)

// Bounds of a request.
const (
	MaxItems       = 100 // item_count is 1…MaxItems
	MaxWorkSeconds = 5.0 // work_seconds is 0…MaxWorkSeconds
)

// The stored topology of every run (see the package doc).
const (
	Nodes  = 21
	Edges  = 28
	Layers = 12
)

// Map node ids and step labels.
const (
	ValidateMapID = "0.1.g0.1"
	ReserveMapID  = "0.5"

	StageReceiveOrder      = "receive_order"
	StageBuildOrderBatch   = "build_order_batch"
	StageValidateItem      = "validate_item"
	StageSummarize         = "summarize_validation"
	StageLoadCustomer      = "load_customer"
	StageCustomerHistory   = "customer_history"
	StageScoreCustomer     = "score_customer"
	StageLoadInventory     = "load_inventory"
	StageLoadShipping      = "load_shipping"
	StageJoinOrderInputs   = "join_order_inputs"
	StagePrepare           = "prepare_reservation"
	StagePrice             = "price_order"
	StageRisk              = "assess_risk"
	StageRecommend         = "recommend"
	StageJoinDecision      = "join_decision_inputs"
	StageReserveInventory  = "reserve_inventory"
	StageDecide            = "decide_fulfillment"
	StageWritePrimary      = "write_primary"
	StageWriteAudit        = "write_audit"
	StageSendNotification  = "send_notification"
	StageFinalize          = "finalize_order"
	mapLabelValidateItems  = "validate_items"
	mapLabelReserveItems   = "reserve_items"
	customerPreviewFailure = "customer_history: the preview projector fails on purpose (the step itself succeeds)"
)

// Stages lists every failure stage, in node-id order.
var Stages = []string{StageReceiveOrder, StageBuildOrderBatch, StageValidateItem, StageSummarize, StageLoadCustomer,
	StageCustomerHistory, StageScoreCustomer, StageLoadInventory, StageLoadShipping, StageJoinOrderInputs, StagePrepare,
	StagePrice, StageRisk, StageRecommend, StageJoinDecision, StageReserveInventory, StageDecide, StageWritePrimary,
	StageWriteAudit, StageSendNotification, StageFinalize}

// ErrInvalidRequest is wrapped by Request.Validate's errors.
var ErrInvalidRequest = errors.New("orderfulfillment: invalid request")

// Request is the workflow's input (the seed endpoint's query parameters).
type Request struct {
	ItemCount    int     `json:"item_count"`
	WorkSeconds  float64 `json:"work_seconds"`
	FailureStage string  `json:"failure_stage,omitempty"`
	FailureItem  int     `json:"failure_item,omitempty"`
}

// DefaultRequest is the seed's default invocation: three items, 50 ms of
// simulated work per step.
func DefaultRequest() Request { return Request{ItemCount: 3, WorkSeconds: 0.05} }

// Validate reports a request the workflow cannot run as asked; its errors
// wrap ErrInvalidRequest and name the field.
func (r Request) Validate() error {
	if r.ItemCount < 1 || r.ItemCount > MaxItems {
		return fmt.Errorf("%w: item_count must be between 1 and %d, got %d", ErrInvalidRequest, MaxItems, r.ItemCount)
	}
	if math.IsNaN(r.WorkSeconds) || r.WorkSeconds < 0 || r.WorkSeconds > MaxWorkSeconds {
		return fmt.Errorf("%w: work_seconds must be between 0 and %g, got %g", ErrInvalidRequest, MaxWorkSeconds, r.WorkSeconds)
	}
	if r.FailureStage == "" {
		if r.FailureItem != 0 {
			return fmt.Errorf("%w: failure_item needs a failure_stage", ErrInvalidRequest)
		}
		return nil
	}
	if !slices.Contains(Stages, r.FailureStage) {
		return fmt.Errorf("%w: failure_stage %q is not a stage (one of %v)", ErrInvalidRequest, r.FailureStage, Stages)
	}
	isMap := r.FailureStage == StageValidateItem || r.FailureStage == StageReserveInventory
	switch {
	case isMap && (r.FailureItem < 0 || r.FailureItem >= r.ItemCount):
		return fmt.Errorf("%w: failure_item %d is not an item (0…%d)", ErrInvalidRequest, r.FailureItem, r.ItemCount-1)
	case !isMap && r.FailureItem != 0:
		return fmt.Errorf("%w: failure_item applies to %s and %s only", ErrInvalidRequest, StageValidateItem, StageReserveInventory)
	}
	return nil
}

// Control travels with every value: the simulated work of each step, the
// failure switch and, for the recovery showcase, the durable attempt.
type Control struct {
	Work         time.Duration `json:"work"`
	FailureStage string        `json:"failure_stage,omitempty"`
	FailureItem  int           `json:"failure_item,omitempty"`
	Attempt      int           `json:"attempt,omitempty"`
}

// StageFailure is the deterministic failure of one step (Item is the map
// item, else -1).
type StageFailure struct {
	Stage   string `json:"stage"`
	Item    int    `json:"item"`
	Attempt int    `json:"attempt,omitempty"`
}

func (e *StageFailure) Error() string {
	s := "orderfulfillment: " + e.Stage
	if e.Item >= 0 {
		s += fmt.Sprintf(" item %d", e.Item)
	}
	s += " failed (deterministic failure"
	if e.Attempt > 0 {
		s += fmt.Sprintf(" of attempt %d", e.Attempt)
	}
	return s + ")"
}

// StageFailure crosses the Ray leaf boundary with its value.
func init() { sdk.RegisterErrorType[*StageFailure]() }

// step simulates c.Work, then fails when stage (item, -1 for a plain step)
// is the failure switch.
func (c Control) step(ctx context.Context, stage string, item int) error {
	if c.Work > 0 {
		t := time.NewTimer(c.Work)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if c.FailureStage == stage && (item < 0 || c.FailureItem == item) {
		return &StageFailure{Stage: stage, Item: item, Attempt: c.Attempt}
	}
	return nil
}

// Line is one item of an order.
type Line struct {
	ItemID    string `json:"item_id"`
	Units     int    `json:"units"`
	UnitCents int    `json:"unit_cents"`
}

// Order is the order every step of the first half sees.
type Order struct {
	OrderID string  `json:"order_id"`
	Lines   []Line  `json:"lines"`
	Control Control `json:"control"`
}

// NewOrder is the deterministic order of r (the recovery showcase passes
// its attempt).
func NewOrder(r Request, attempt int) Order {
	o := Order{OrderID: fmt.Sprintf("order-%d", r.ItemCount), Control: Control{
		Work: time.Duration(r.WorkSeconds * float64(time.Second)), FailureStage: r.FailureStage, FailureItem: r.FailureItem, Attempt: attempt}}
	for i := range r.ItemCount {
		o.Lines = append(o.Lines, Line{ItemID: fmt.Sprintf("item-%d", i), Units: i%3 + 1, UnitCents: 1000 + 250*i})
	}
	return o
}

// ReceiveOrder checks the request and builds the order (0.0).
func ReceiveOrder(ctx context.Context, r Request) (Order, error) {
	if err := r.Validate(); err != nil {
		return Order{}, err
	}
	o := NewOrder(r, 0)
	return o, o.Control.step(ctx, StageReceiveOrder, -1)
}

// BatchItem is one item of the validation map.
type BatchItem struct {
	Index   int     `json:"index"`
	Line    Line    `json:"line"`
	Control Control `json:"control"`
}

// Validation is one validated item.
type Validation struct {
	ItemID  string  `json:"item_id"`
	Valid   bool    `json:"valid"`
	Control Control `json:"control"`
}

// Facts is one context branch's contribution to the join.
type Facts struct {
	Source        string  `json:"source"`
	Order         *Order  `json:"order,omitempty"`
	ValidItems    int     `json:"valid_items,omitempty"`
	CustomerScore int     `json:"customer_score,omitempty"`
	InStockUnits  int     `json:"in_stock_units,omitempty"`
	ShippingCents int     `json:"shipping_cents,omitempty"`
	Control       Control `json:"control"`
}

// BuildOrderBatch makes the validation map's items (0.1.g0.0).
func BuildOrderBatch(ctx context.Context, o Order) ([]BatchItem, error) {
	if err := o.Control.step(ctx, StageBuildOrderBatch, -1); err != nil {
		return nil, err
	}
	items := make([]BatchItem, len(o.Lines))
	for i, l := range o.Lines {
		items[i] = BatchItem{Index: i, Line: l, Control: o.Control}
	}
	return items, nil
}

// ValidateItem validates one item (0.1.g0.1.m<n>).
func ValidateItem(ctx context.Context, it BatchItem) (Validation, error) {
	if err := it.Control.step(ctx, StageValidateItem, it.Index); err != nil {
		return Validation{}, err
	}
	return Validation{ItemID: it.Line.ItemID, Valid: it.Line.Units > 0 && it.Line.UnitCents > 0, Control: it.Control}, nil
}

// SummarizeValidation counts the valid items (0.1.g0.2).
func SummarizeValidation(ctx context.Context, vs []Validation) (Facts, error) {
	f := Facts{Source: "validation"}
	if len(vs) > 0 {
		f.Control = vs[0].Control
	}
	for _, v := range vs {
		if v.Valid {
			f.ValidItems++
		}
	}
	return f, f.Control.step(ctx, StageSummarize, -1)
}

// CustomerFact is one customer lookup.
type CustomerFact struct {
	Source  string  `json:"source"`
	Score   int     `json:"score"`
	Control Control `json:"control"`
}

// LoadCustomer loads the customer's profile (0.1.g1.0.g0).
func LoadCustomer(ctx context.Context, o Order) (CustomerFact, error) {
	return CustomerFact{Source: "profile", Score: 40, Control: o.Control}, o.Control.step(ctx, StageLoadCustomer, -1)
}

// CustomerHistory loads the customer's order history (0.1.g1.0.g1); its
// output preview fails on purpose (CustomerHistoryPreview).
func CustomerHistory(ctx context.Context, o Order) (CustomerFact, error) {
	return CustomerFact{Source: "history", Score: 10 * len(o.Lines), Control: o.Control}, o.Control.step(ctx, StageCustomerHistory, -1)
}

// ErrPreviewFailed is CustomerHistoryPreview's error.
var ErrPreviewFailed = errors.New(customerPreviewFailure)

// CustomerHistoryPreview is customer_history's projector: it always fails,
// so a run shows a succeeded node whose preview failed.
func CustomerHistoryPreview(CustomerFact) (any, error) { return nil, ErrPreviewFailed }

// ScoreCustomer joins the customer facts (0.1.g1.1).
func ScoreCustomer(ctx context.Context, fs []CustomerFact) (Facts, error) {
	f := Facts{Source: "customer"}
	for _, c := range fs {
		f.CustomerScore += c.Score
		f.Control = c.Control
	}
	return f, f.Control.step(ctx, StageScoreCustomer, -1)
}

// LoadInventory loads the stock of the order's items (0.1.g2).
func LoadInventory(ctx context.Context, o Order) (Facts, error) {
	units := 0
	for _, l := range o.Lines {
		units += l.Units + 2
	}
	return Facts{Source: "inventory", Order: &o, InStockUnits: units, Control: o.Control}, o.Control.step(ctx, StageLoadInventory, -1)
}

// LoadShipping quotes shipping (0.1.g3).
func LoadShipping(ctx context.Context, o Order) (Facts, error) {
	return Facts{Source: "shipping", ShippingCents: 499 + 100*len(o.Lines), Control: o.Control}, o.Control.step(ctx, StageLoadShipping, -1)
}

// OrderContext is the joined order context (0.2's result).
type OrderContext struct {
	Order         Order `json:"order"`
	ValidItems    int   `json:"valid_items"`
	CustomerScore int   `json:"customer_score"`
	InStockUnits  int   `json:"in_stock_units"`
	ShippingCents int   `json:"shipping_cents"`
}

// JoinOrderInputs joins the four context branches (0.2).
func JoinOrderInputs(ctx context.Context, fs []Facts) (OrderContext, error) {
	var c OrderContext
	for _, f := range fs {
		if f.Order != nil {
			c.Order = *f.Order
		}
		c.ValidItems += f.ValidItems
		c.CustomerScore += f.CustomerScore
		c.InStockUnits += f.InStockUnits
		c.ShippingCents += f.ShippingCents
	}
	if c.Order.OrderID == "" {
		return c, errors.New("orderfulfillment: join_order_inputs: no branch carried the order")
	}
	return c, c.Order.Control.step(ctx, StageJoinOrderInputs, -1)
}

// ReserveItem is one item of the reservation map.
type ReserveItem struct {
	Index          int     `json:"index"`
	Line           Line    `json:"line"`
	OrderID        string  `json:"order_id"`
	Recommendation string  `json:"recommendation"`
	Control        Control `json:"control"`
}

// Analysis is one half of the split: the prepared reservation or the
// commercial analysis.
type Analysis struct {
	Kind           string        `json:"kind"`
	Items          []ReserveItem `json:"items,omitempty"`
	SubtotalCents  int           `json:"subtotal_cents,omitempty"`
	Risk           string        `json:"risk,omitempty"`
	Recommendation string        `json:"recommendation,omitempty"`
	Control        Control       `json:"control"`
}

// PrepareReservation prepares one reservation per item (0.3.g0).
func PrepareReservation(ctx context.Context, c OrderContext) (Analysis, error) {
	a := Analysis{Kind: "reservation", Control: c.Order.Control}
	for i, l := range c.Order.Lines {
		a.Items = append(a.Items, ReserveItem{Index: i, Line: l, OrderID: c.Order.OrderID, Control: c.Order.Control})
	}
	return a, a.Control.step(ctx, StagePrepare, -1)
}

// Signal is one commercial signal.
type Signal struct {
	Name    string  `json:"name"`
	Value   int     `json:"value"`
	Control Control `json:"control"`
}

// PriceOrder prices the order (0.3.g1.0.g0).
func PriceOrder(ctx context.Context, c OrderContext) (Signal, error) {
	total := c.ShippingCents
	for _, l := range c.Order.Lines {
		total += l.Units * l.UnitCents
	}
	return Signal{Name: "subtotal_cents", Value: total, Control: c.Order.Control}, c.Order.Control.step(ctx, StagePrice, -1)
}

// AssessRisk scores the order's risk, 0 (none) to 100 (0.3.g1.0.g1).
func AssessRisk(ctx context.Context, c OrderContext) (Signal, error) {
	risk := max(0, 100-c.CustomerScore-10*c.ValidItems)
	return Signal{Name: "risk", Value: risk, Control: c.Order.Control}, c.Order.Control.step(ctx, StageRisk, -1)
}

// Recommend turns the signals into the commercial analysis (0.3.g1.1).
func Recommend(ctx context.Context, ss []Signal) (Analysis, error) {
	a := Analysis{Kind: "commercial", Risk: "low", Recommendation: "ship"}
	for _, s := range ss {
		a.Control = s.Control
		switch s.Name {
		case "subtotal_cents":
			a.SubtotalCents = s.Value
		case "risk":
			if s.Value > 50 {
				a.Risk, a.Recommendation = "high", "review"
			}
		}
	}
	return a, a.Control.step(ctx, StageRecommend, -1)
}

// JoinDecisionInputs joins the prepared reservation with the commercial
// analysis into the reservation map's items (0.4).
func JoinDecisionInputs(ctx context.Context, as []Analysis) ([]ReserveItem, error) {
	var items []ReserveItem
	rec := ""
	var c Control
	for _, a := range as {
		c = a.Control
		if a.Kind == "reservation" {
			items = a.Items
		} else {
			rec = a.Recommendation
		}
	}
	for i := range items {
		items[i].Recommendation = rec
	}
	return items, c.step(ctx, StageJoinDecision, -1)
}

// Reservation is one reserved item.
type Reservation struct {
	ItemID         string  `json:"item_id"`
	ReservedUnits  int     `json:"reserved_units"`
	OrderID        string  `json:"order_id"`
	Recommendation string  `json:"recommendation"`
	Control        Control `json:"control"`
}

// ReserveInventory reserves one item's units (0.5.m<n>).
func ReserveInventory(ctx context.Context, it ReserveItem) (Reservation, error) {
	if err := it.Control.step(ctx, StageReserveInventory, it.Index); err != nil {
		return Reservation{}, err
	}
	return Reservation{ItemID: it.Line.ItemID, ReservedUnits: it.Line.Units, OrderID: it.OrderID, Recommendation: it.Recommendation, Control: it.Control}, nil
}

// Decision is the fulfillment decision (0.6's result).
type Decision struct {
	OrderID        string  `json:"order_id"`
	Items          int     `json:"items"`
	ReservedUnits  int     `json:"reserved_units"`
	Recommendation string  `json:"recommendation"`
	Fulfill        bool    `json:"fulfill"`
	Control        Control `json:"control"`
}

// DecideFulfillment decides from the reservations (0.6).
func DecideFulfillment(ctx context.Context, rs []Reservation) (Decision, error) {
	d := Decision{Items: len(rs)}
	for _, r := range rs {
		d.OrderID, d.Recommendation, d.Control = r.OrderID, r.Recommendation, r.Control
		d.ReservedUnits += r.ReservedUnits
	}
	d.Fulfill = d.Recommendation == "ship" && d.Items > 0
	return d, d.Control.step(ctx, StageDecide, -1)
}

// DecisionPreview is decide_fulfillment's output preview.
func DecisionPreview(d Decision) (any, error) {
	return map[string]any{"order_id": d.OrderID, "reserved_units": d.ReservedUnits, "fulfill": d.Fulfill}, nil
}

// Receipt is one sink's acknowledgement.
type Receipt struct {
	Sink     string   `json:"sink"`
	Decision Decision `json:"decision"`
}

func sink(ctx context.Context, name, stage string, d Decision) (Receipt, error) {
	return Receipt{Sink: name, Decision: d}, d.Control.step(ctx, stage, -1)
}

// WritePrimary records the decision in the primary store (0.7.g0).
func WritePrimary(ctx context.Context, d Decision) (Receipt, error) {
	return sink(ctx, "primary", StageWritePrimary, d)
}

// WriteAudit appends the decision to the audit log (0.7.g1).
func WriteAudit(ctx context.Context, d Decision) (Receipt, error) {
	return sink(ctx, "audit", StageWriteAudit, d)
}

// SendNotification notifies the customer (0.7.g2).
func SendNotification(ctx context.Context, d Decision) (Receipt, error) {
	return sink(ctx, "notification", StageSendNotification, d)
}

// Result is the workflow's result.
type Result struct {
	OrderID        string   `json:"order_id"`
	Items          int      `json:"items"`
	ReservedUnits  int      `json:"reserved_units"`
	Recommendation string   `json:"recommendation"`
	Fulfilled      bool     `json:"fulfilled"`
	Sinks          []string `json:"sinks"`
	// Recovery is set by the recovery showcase: the attempt that succeeded.
	Recovery *Recovery `json:"recovery,omitempty"`
}

// Recovery identifies the durable attempt that produced a result.
type Recovery struct {
	Attempt int `json:"attempt"`
}

// FinalizeOrder finalizes the order once every sink acknowledged (0.8).
func FinalizeOrder(ctx context.Context, rs []Receipt) (Result, error) {
	var res Result
	var c Control
	for _, r := range rs {
		d := r.Decision
		c = d.Control
		res.OrderID, res.Items, res.ReservedUnits, res.Recommendation, res.Fulfilled = d.OrderID, d.Items, d.ReservedUnits, d.Recommendation, d.Fulfill
		res.Sinks = append(res.Sinks, r.Sink)
	}
	if c.Attempt > 0 {
		res.Recovery = &Recovery{Attempt: c.Attempt}
	}
	return res, c.step(ctx, StageFinalize, -1)
}

// Build returns the workflow after its entry step: every node from 0.1 on,
// the same for the order-fulfillment and the recovery showcases. Each call
// makes a new flow value (a durable registration needs its own).
func Build[In any](entry sdk.Flow[In, Order]) sdk.Flow[In, Result] {
	mapLimits := sdk.Limits{MaxConcurrency: 4, MaxItems: MaxItems}
	inputs := sdk.Group(
		sdk.Chain3(
			sdk.Step(BuildOrderBatch).Named(StageBuildOrderBatch),
			sdk.Map(sdk.Step(ValidateItem).Named(StageValidateItem)).WithLimits(mapLimits).Named(mapLabelValidateItems),
			sdk.Step(SummarizeValidation).Named(StageSummarize),
		),
		sdk.Then(
			sdk.Group(
				sdk.Step(LoadCustomer).Named(StageLoadCustomer),
				sdk.Step(CustomerHistory).Named(StageCustomerHistory).WithOutputPreview(CustomerHistoryPreview),
			),
			sdk.Step(ScoreCustomer).Named(StageScoreCustomer),
		),
		sdk.Step(LoadInventory).Named(StageLoadInventory),
		sdk.Step(LoadShipping).Named(StageLoadShipping),
	)
	split := sdk.Group(
		sdk.Step(PrepareReservation).Named(StagePrepare),
		sdk.Then(
			sdk.Group(sdk.Step(PriceOrder).Named(StagePrice), sdk.Step(AssessRisk).Named(StageRisk)),
			sdk.Step(Recommend).Named(StageRecommend),
		),
	)
	sinks := sdk.Group(
		sdk.Step(WritePrimary).Named(StageWritePrimary),
		sdk.Step(WriteAudit).Named(StageWriteAudit),
		sdk.Step(SendNotification).Named(StageSendNotification),
	)
	return sdk.Chain3(
		sdk.Chain4(entry, inputs, sdk.Step(JoinOrderInputs).Named(StageJoinOrderInputs), split),
		sdk.Chain3(
			sdk.Step(JoinDecisionInputs).Named(StageJoinDecision),
			sdk.Map(sdk.Step(ReserveInventory).Named(StageReserveInventory)).WithLimits(mapLimits).Named(mapLabelReserveItems),
			sdk.Step(DecideFulfillment).Named(StageDecide).WithOutputPreview(DecisionPreview),
		),
		sdk.Then(sinks, sdk.Step(FinalizeOrder).Named(StageFinalize)),
	)
}

// FlowName is the durable flow name of Workflow.
const FlowName = "orderfulfillment"

// Workflow is the order-fulfillment showcase.
var Workflow = Build(sdk.Step(ReceiveOrder).Named(StageReceiveOrder))

func init() { sdk.RegisterFlow(FlowName, Workflow) }
