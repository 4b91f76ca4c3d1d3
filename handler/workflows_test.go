package handler_test

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/skeinflow/skein/internal/testflows"
	"github.com/skeinflow/skein/workflow"
)

const slogDebug = slog.LevelDebug

// The library tests' serial and fan-out workflows (internal/testflows):
// serial runs n steps one after the other, fanOut runs n steps at once and
// sums their squares.
var (
	serial = testflows.Serial
	fanOut = testflows.FanOut
)

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

var allDefs = []workflow.Definition{serial, testflows.Increment, fanOut, testflows.Square, nap, napper, respond, webhooked, plainHook}
