package handler_test

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/skeinflow/skein/workflow"
)

const slogDebug = slog.LevelDebug

var addOne = workflow.NewStep("add-one", func(_ context.Context, n int) (int, error) { return n + 1, nil })

// serial runs n steps one after the other.
var serial = workflow.New("serial", func(ctx workflow.Context, n int) (int, error) {
	v := 0
	for range n {
		var err error
		if v, err = addOne.Call(ctx, v); err != nil {
			return 0, err
		}
	}
	return v, nil
})

var square = workflow.NewStep("square", func(_ context.Context, n int) (int, error) { return n * n, nil })

// fanOut runs n steps at once and sums their results.
var fanOut = workflow.New("fan-out", func(ctx workflow.Context, n int) (int, error) {
	fs := make([]workflow.Future[int], n)
	for i := range n {
		fs[i] = square.Go(ctx, i)
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

// Nap is a step's sleep; Stubborn ignores cancellation.
type Nap struct {
	D        time.Duration
	Stubborn bool
}

var nap = workflow.NewStep("nap", func(ctx context.Context, n Nap) (time.Duration, error) {
	if n.Stubborn {
		time.Sleep(n.D)
		return n.D, nil
	}
	t := time.NewTimer(n.D)
	defer t.Stop()
	select {
	case <-t.C:
		return n.D, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}, workflow.StepOptions{MaxRetries: 5, Backoff: func(int) time.Duration { return 10 * time.Millisecond }})

// Naps is Count naps one after the other.
type Naps struct {
	Count int
	Nap   Nap
}

var napper = workflow.New("napper", func(ctx workflow.Context, in Naps) (int, error) {
	for i := range in.Count {
		if _, err := nap.Call(ctx, in.Nap); err != nil {
			return i, err
		}
	}
	return in.Count, nil
})

// HookMode says how the webhook workflow's webhook answers.
type HookMode string

var respond = workflow.NewStep("respond", func(ctx context.Context, r *workflow.Request) (string, error) {
	return "", r.Respond(ctx, workflow.Response{
		Status: http.StatusCreated, Header: http.Header{"X-Reply": {"yes"}}, Body: append([]byte("got "), r.Body...),
	})
})

// webhooked waits for one request on a webhook and returns its body.
var webhooked = workflow.New("webhooked", func(ctx workflow.Context, mode HookMode) (string, error) {
	var opts workflow.WebhookOptions
	switch mode {
	case "static":
		opts.Response = &workflow.Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("thanks")}
	case "binary":
		opts.Response = &workflow.Response{Status: http.StatusOK, Body: []byte{0xff, 0x00, 0xfe}}
	case "manual":
		opts.Manual = true
	}
	wh := workflow.NewWebhook(ctx, opts)
	req, err := wh.Receive(ctx)
	if err != nil {
		return "", err
	}
	if mode == "manual" {
		if _, err := respond.Call(ctx, req); err != nil {
			return "", err
		}
	}
	return req.Method + " " + string(req.Body), nil
})

// plainHook waits on a hook (not a webhook) with the given token.
var plainHook = workflow.New("plain-hook", func(ctx workflow.Context, token string) (string, error) {
	return workflow.NewHook[string](ctx, workflow.HookOptions{Token: token}).Receive(ctx)
})

var allDefs = []workflow.Definition{addOne, serial, square, fanOut, nap, napper, respond, webhooked, plainHook}
