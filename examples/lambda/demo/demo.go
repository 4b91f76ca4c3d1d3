package demo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/skeinflow/skein/workflow"
)

// Registry returns a registry with every workflow and step of the package.
func Registry() (*workflow.Registry, error) {
	r := workflow.NewRegistry()
	if err := r.Register(
		FulfilOrder, ChargeCard, PrintLabel, Ship,
		Serial, Increment,
		FanOut, Square,
		Sleeper,
		Approval,
		Streamer, Emit,
		Flaky, FlakyStep,
		Slow, SlowStep,
		StaticWebhook, ManualWebhook, Reply,
		Parent,
		Chaos, ChaosChild, ChaosUndo, ChaosStep,
	); err != nil {
		return nil, err
	}
	return r, nil
}

// Order is an order to fulfil.
type Order struct {
	ID    string   `json:"id"`
	Items []string `json:"items"`
	Total int      `json:"total"`
}

// Receipt is a charge.
type Receipt struct {
	Charged int `json:"charged"`
}

// ChargeCard charges an order (pretend).
var ChargeCard = workflow.NewStep("charge-card", func(_ context.Context, o Order) (Receipt, error) {
	if o.Total <= 0 {
		return Receipt{}, workflow.Fatal(fmt.Errorf("order %s: nothing to charge", o.ID))
	}
	return Receipt{Charged: o.Total}, nil
})

// PrintLabel prints one item's label (pretend).
var PrintLabel = workflow.NewStep("print-label", func(_ context.Context, item string) (string, error) {
	return "label:" + item, nil
})

// Ship ships an order (pretend).
var Ship = workflow.NewStep("ship", func(_ context.Context, o Order) (string, error) {
	return "shipped " + o.ID, nil
})

// FulfilOrder charges, prints the labels in parallel, waits a moment and
// ships: the quickstart's workflow.
var FulfilOrder = workflow.New("fulfil-order", func(ctx workflow.Context, o Order) (string, error) {
	r, err := ChargeCard.Call(ctx, o)
	if err != nil {
		return "", err
	}
	labels := make([]workflow.Future[string], len(o.Items))
	for i, item := range o.Items {
		labels[i] = PrintLabel.Go(ctx, item)
	}
	ls, err := workflow.All(ctx, labels...)
	if err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 100*time.Millisecond); err != nil {
		return "", err
	}
	shipped, err := Ship.Call(ctx, o)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("order %s: charged %d, %s, %s", o.ID, r.Charged, strings.Join(ls, " "), shipped), nil
})

// Increment adds one.
var Increment = workflow.NewStep("increment", func(_ context.Context, n int) (int, error) { return n + 1, nil })

// Serial runs n steps one after the other and returns n.
var Serial = workflow.New("serial", func(ctx workflow.Context, n int) (int, error) {
	v := 0
	for range n {
		var err error
		if v, err = Increment.Call(ctx, v); err != nil {
			return 0, err
		}
	}
	return v, nil
})

// Square squares.
var Square = workflow.NewStep("square", func(_ context.Context, n int) (int, error) { return n * n, nil })

// FanOut runs n steps at once and returns the sum of their results.
var FanOut = workflow.New("fan-out", func(ctx workflow.Context, n int) (int, error) {
	fs := make([]workflow.Future[int], n)
	for i := range n {
		fs[i] = Square.Go(ctx, i)
	}
	vs, err := workflow.All(ctx, fs...)
	if err != nil {
		return 0, err
	}
	sum := 0
	for _, v := range vs {
		sum += v
	}
	return sum, nil
})

// Sleeper sleeps for d and returns how long it slept by the workflow's
// clock.
var Sleeper = workflow.New("sleeper", func(ctx workflow.Context, d time.Duration) (time.Duration, error) {
	start := ctx.Now()
	if err := workflow.Sleep(ctx, d); err != nil {
		return 0, err
	}
	return ctx.Now().Sub(start), nil
})

// Approval waits for one request on a webhook (default answer: 202) and
// returns its body.
var Approval = workflow.New("approval", func(ctx workflow.Context, _ struct{}) (string, error) {
	wh := workflow.NewWebhook(ctx, workflow.WebhookOptions{})
	req, err := wh.Receive(ctx)
	if err != nil {
		return "", err
	}
	return string(req.Body), nil
})

// Emission is what Emit writes: Chunks chunks, Interval apart.
type Emission struct {
	Chunks   int           `json:"chunks"`
	Interval time.Duration `json:"interval"`
}

// Emit writes numbered chunks to the run's default stream, then closes it.
var Emit = workflow.NewStep("emit", func(ctx context.Context, e Emission) (int, error) {
	w := workflow.Writer(ctx, "")
	for i := range e.Chunks {
		if i > 0 {
			t := time.NewTimer(e.Interval)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return 0, ctx.Err()
			}
		}
		if _, err := fmt.Fprintf(w, "chunk %d", i); err != nil {
			return 0, err
		}
	}
	return e.Chunks, w.Close()
})

// Streamer runs Emit.
var Streamer = workflow.New("streamer", func(ctx workflow.Context, e Emission) (int, error) {
	return Emit.Call(ctx, e)
})

// Flakiness says how often FlakyStep fails before it succeeds.
type Flakiness struct {
	Failures int `json:"failures"`
}

// ErrFlaky is FlakyStep's failure.
var ErrFlaky = errors.New("flaky: not this time")

// FlakyStep fails its first Failures attempts, then returns the attempt
// that succeeded. Retries back off from 1s.
var FlakyStep = workflow.NewStep("flaky-step", func(ctx context.Context, f Flakiness) (int, error) {
	md, _ := workflow.StepMetadataFrom(ctx)
	if md.Attempt <= f.Failures {
		return 0, fmt.Errorf("attempt %d: %w", md.Attempt, ErrFlaky)
	}
	return md.Attempt, nil
}, workflow.StepOptions{MaxRetries: 5, Backoff: workflow.ExponentialBackoff(time.Second, 4*time.Second)})

// Flaky runs FlakyStep and returns the attempt that succeeded.
var Flaky = workflow.New("flaky", func(ctx workflow.Context, f Flakiness) (int, error) {
	return FlakyStep.Call(ctx, f)
})

// Work is Steps steps of D each.
type Work struct {
	Steps int           `json:"steps"`
	D     time.Duration `json:"d"`
}

// SlowStep works for d (honouring cancellation) and returns its attempt.
var SlowStep = workflow.NewStep("slow-step", func(ctx context.Context, d time.Duration) (int, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	md, _ := workflow.StepMetadataFrom(ctx)
	return md.Attempt, nil
})

// Slow runs Steps slow steps one after the other and returns the sum of
// their attempts (Steps when none was retried).
var Slow = workflow.New("slow", func(ctx workflow.Context, w Work) (int, error) {
	sum := 0
	for range w.Steps {
		a, err := SlowStep.Call(ctx, w.D)
		if err != nil {
			return 0, err
		}
		sum += a
	}
	return sum, nil
})

// StaticBody is what StaticWebhook's webhook answers with (status 200).
const StaticBody = "static answer"

// ReplyBody is what Reply answers a ManualWebhook's request with (status 201).
const ReplyBody = "answered by a step"

// StaticWebhook waits for one request on a webhook that answers 200 with
// StaticBody, and returns the request's body.
var StaticWebhook = workflow.New("static-webhook", func(ctx workflow.Context, _ struct{}) (string, error) {
	wh := workflow.NewWebhook(ctx, workflow.WebhookOptions{Response: &workflow.Response{
		Status: http.StatusOK, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte(StaticBody),
	}})
	req, err := wh.Receive(ctx)
	if err != nil {
		return "", err
	}
	return string(req.Body), nil
})

// Reply answers a manual webhook's request from a step (the webhook function
// reads the answer from the request's reply stream).
var Reply = workflow.NewStep("reply", func(ctx context.Context, req *workflow.Request) (string, error) {
	if err := req.Respond(ctx, workflow.Response{Status: http.StatusCreated, Body: []byte(ReplyBody)}); err != nil {
		return "", err
	}
	return string(req.Body), nil
})

// ManualWebhook waits for one request on a manual webhook, answers it from a
// step (Reply) and returns the request's body.
var ManualWebhook = workflow.New("manual-webhook", func(ctx workflow.Context, _ struct{}) (string, error) {
	wh := workflow.NewWebhook(ctx, workflow.WebhookOptions{Manual: true})
	req, err := wh.Receive(ctx)
	if err != nil {
		return "", err
	}
	return Reply.Call(ctx, req)
})

// Parent runs Serial(n) as a child run and returns its result.
var Parent = workflow.New("parent", func(ctx workflow.Context, n int) (int, error) {
	return Serial.Call(ctx, n)
})
