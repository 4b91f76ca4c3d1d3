package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/skeinflow/skein/workflow"
)

// Order is what the shop hands to the workflow: the run's input, recorded
// once. A resumed run keeps its recorded order, whatever the flags say now.
type Order struct {
	ID    string `json:"id"`
	Card  string `json:"card"` // last four digits
	Lines []Line `json:"lines"`
	// PickupAfter is how long the packed parcel waits for the courier's
	// pickup slot: a durable sleep.
	PickupAfter time.Duration `json:"pickupAfter"`
	// ReceiptDir is where the run's cleanup hook archives the receipt of
	// the shipped order (archiveReceipt); none when empty.
	ReceiptDir string `json:"receiptDir,omitempty"`
}

// Line is one line item of an order.
type Line struct {
	SKU       string `json:"sku"`
	Qty       int    `json:"qty"`
	UnitCents int    `json:"unitCents"`
}

// TotalCents is what the order costs.
func (o Order) TotalCents() int {
	total := 0
	for _, l := range o.Lines {
		total += l.Qty * l.UnitCents
	}
	return total
}

// Payment is what the payment gateway returns.
type Payment struct {
	ChargeID string `json:"chargeId"`
	Cents    int    `json:"cents"`
	Attempt  int    `json:"attempt"`
}

// Reservation is stock held for one line item.
type Reservation struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
	Bin string `json:"bin"`
}

// Approval is what the approver sends to the order's hook.
type Approval struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
	Note     string `json:"note,omitempty"`
}

// Result is the workflow's output.
type Result struct {
	OrderID         string        `json:"orderId"`
	ChargeID        string        `json:"chargeId"`
	ChargedCents    int           `json:"chargedCents"`
	PaymentAttempts int           `json:"paymentAttempts"`
	Reserved        []Reservation `json:"reserved"`
	ApprovedBy      string        `json:"approvedBy"`
	Tracking        string        `json:"tracking"`
}

// approvalToken is the token of an order's approval hook: whoever knows the
// order can approve it with Client.ResumeHook.
func approvalToken(orderID string) string { return "approve/" + orderID }

// The steps stand in for calls to other systems, each taking a while
// (work). Their functions are built from the wait they simulate, so that a
// test can run the very same steps with no wait (main_test.go stubs them
// with skeintest.StubStep).

// latency simulates another system's response time.
type latency func(ctx context.Context, d time.Duration) error

// chargeCard charges the card. The gateway fails the first attempt (a 503, as
// gateways do); the plain error is retried with this step's backoff.
var chargeCard = workflow.NewStep("charge-card", charge(work),
	workflow.StepOptions{Backoff: workflow.ExponentialBackoff(250*time.Millisecond, 5*time.Second)})

func charge(work latency) func(ctx context.Context, o Order) (Payment, error) {
	return func(ctx context.Context, o Order) (Payment, error) {
		m, _ := workflow.StepMetadataFrom(ctx)
		if err := work(ctx, 40*time.Millisecond); err != nil {
			return Payment{}, err
		}
		if m.Attempt == 1 {
			return Payment{}, errors.New("payment gateway: 503 Service Unavailable")
		}
		p := Payment{ChargeID: "ch_" + o.ID, Cents: o.TotalCents(), Attempt: m.Attempt}
		_, err := fmt.Fprintf(workflow.Writer(ctx, ""), "payment: charged %s to the card ending %s", money(p.Cents), o.Card)
		return p, err
	}
}

// reserveStock holds stock for one line item; the workflow runs one per line,
// in parallel.
var reserveStock = workflow.NewStep("reserve-stock", reserve(work))

func reserve(work latency) func(ctx context.Context, l Line) (Reservation, error) {
	return func(ctx context.Context, l Line) (Reservation, error) {
		if err := work(ctx, time.Duration(40+30*l.Qty)*time.Millisecond); err != nil {
			return Reservation{}, err
		}
		h := hash(l.SKU)
		r := Reservation{SKU: l.SKU, Qty: l.Qty, Bin: fmt.Sprintf("%c-%02d", 'A'+h%6, h%40)}
		_, err := fmt.Fprintf(workflow.Writer(ctx, ""), "stock: reserved %d × %s in bin %s", r.Qty, r.SKU, r.Bin)
		return r, err
	}
}

// shipOrder prints the label and hands the parcel to the courier.
var shipOrder = workflow.NewStep("ship", ship(work))

func ship(work latency) func(ctx context.Context, o Order) (string, error) {
	return func(ctx context.Context, o Order) (string, error) {
		if err := work(ctx, 80*time.Millisecond); err != nil {
			return "", err
		}
		tracking := fmt.Sprintf("SKN-%s-%04X", strings.ToUpper(o.ID), hash(o.ID)%0x10000)
		out := workflow.Writer(ctx, "")
		if _, err := fmt.Fprintf(out, "shipping: label printed, tracking %s", tracking); err != nil {
			return "", err
		}
		_, err := fmt.Fprintf(out, "shipping: parcel handed to the courier")
		return tracking, err
	}
}

// fulfilOrder is the workflow: charge, reserve every line in parallel, wait
// for a person's approval, wait for the pickup slot, ship. Every step result,
// the approval and the timer are in the run's event log, so a killed process
// picks up where it stopped.
var fulfilOrder = workflow.New("fulfil-order", func(ctx workflow.Context, o Order) (Result, error) {
	pay, err := chargeCard.Call(ctx, o)
	if err != nil {
		return Result{}, err
	}

	holds := make([]workflow.Future[Reservation], len(o.Lines))
	for i, l := range o.Lines {
		holds[i] = reserveStock.Go(ctx, l)
	}
	reserved, err := workflow.All(ctx, holds...)
	if err != nil {
		return Result{}, err
	}

	hook := workflow.NewHook[Approval](ctx, workflow.HookOptions{
		Token:    approvalToken(o.ID),
		Metadata: map[string]string{"order": o.ID, "total": money(pay.Cents)},
	})
	approval, err := hook.Receive(ctx)
	if err != nil {
		return Result{}, err
	}
	hook.Dispose(ctx)
	if !approval.Approved {
		return Result{}, fmt.Errorf("order %s was rejected by %s: %s", o.ID, approval.By, approval.Note)
	}

	if err := workflow.Sleep(ctx, o.PickupAfter); err != nil {
		return Result{}, err
	}
	tracking, err := shipOrder.Call(ctx, o)
	if err != nil {
		return Result{}, err
	}
	return Result{
		OrderID: o.ID, ChargeID: pay.ChargeID, ChargedCents: pay.Cents, PaymentAttempts: pay.Attempt,
		Reserved: reserved, ApprovedBy: approval.By, Tracking: tracking,
	}, nil
}).WithCleanup(archiveReceipt, workflow.CleanupOptions{Timeout: 10 * time.Second})

// definitions is everything the worker runs.
func definitions() []workflow.Definition {
	return []workflow.Definition{fulfilOrder, chargeCard, reserveStock, shipOrder}
}

// newOrder is the order the quickstart places.
func newOrder(id string, pickupAfter time.Duration) Order {
	return Order{
		ID:   id,
		Card: "4242",
		Lines: []Line{
			{SKU: "MUG-BLUE", Qty: 2, UnitCents: 1250},
			{SKU: "TEE-L", Qty: 1, UnitCents: 2400},
			{SKU: "STICKER", Qty: 5, UnitCents: 150},
		},
		PickupAfter: pickupAfter,
	}
}

// work stands in for a call to another system.
func work(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func hash(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

func money(cents int) string { return fmt.Sprintf("$%d.%02d", cents/100, cents%100) }
