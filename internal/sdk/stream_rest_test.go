package sdk_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// TestStreamsOfCompensationsCloseAtRest: a saga's compensation, which runs
// after the run failed, writes to the run's default stream and to a stream
// of its own; both are closed once the run is at rest, so readers of
// either end after the compensation's chunk instead of waiting forever.
func TestStreamsOfCompensationsCloseAtRest(t *testing.T) {
	t.Parallel()
	undo := sdk.NewStep("sr-undo", func(ctx context.Context, c sdk.Compensation[string, string]) (struct{}, error) {
		if _, err := sdk.Writer(ctx, "").Write([]byte("refund " + c.Result)); err != nil {
			return struct{}{}, err
		}
		_, err := sdk.Writer(ctx, "undo").Write([]byte("undone"))
		return struct{}{}, err
	})
	charge := sdk.WithCompensation(sdk.NewStep("sr-charge", func(ctx context.Context, in string) (string, error) {
		_, err := sdk.Writer(ctx, "").Write([]byte("charged"))
		return "ch_1", err
	}), undo)
	ship := sdk.NewStep("sr-ship", func(ctx context.Context, in string) (string, error) {
		return "", sdk.Fatal(errors.New("no courier"))
	})
	saga := sdk.New("sr-saga", func(ctx sdk.Context, in string) (string, error) {
		if _, err := charge.Call(ctx, in); err != nil {
			return "", err
		}
		return ship.Call(ctx, in)
	}).WithCompensateOnFailure()
	e := newEnv(t, saga, charge, undo, ship)
	ctx := e.ctx()
	run, err := saga.Start(ctx, e.client, "order")
	if err != nil {
		t.Fatal(err)
	}
	info, err := e.client.WaitDeactivated(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if c := info.Compensations; c.Succeeded != 1 {
		t.Fatalf("compensations %+v, want one succeeded (the undo writes to the default stream)", c)
	}
	for ns, want := range map[string][]string{"": {"bytes:charged", "bytes:refund ch_1"}, "undo": {"bytes:undone"}} {
		st, err := e.lw.StreamInfo(ctx, &world.StreamInfoParams{RunID: run.ID(), Name: sdk.StreamNameOf(ns)})
		if err != nil {
			t.Fatal(err)
		}
		if !st.Done {
			t.Errorf("stream %q of a run at rest is not closed in the World", ns)
		}
		if got := readAll(t, e.client, run.ID(), sdk.StreamOptions{Namespace: ns}); !equal(got, want) {
			t.Errorf("stream %q = %q, want %q", ns, got, want)
		}
	}
}

// TestMissingStreamOfRunAtRestIsDone: a stream a run at rest never wrote
// reads as done (an empty page, Done), live or by page, instead of an
// open stream nothing will ever close.
func TestMissingStreamOfRunAtRestIsDone(t *testing.T) {
	t.Parallel()
	wf := sdk.New("sr-quiet", func(ctx sdk.Context, in string) (string, error) { return in, nil })
	e := newEnv(t, wf)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.WaitDeactivated(ctx, run.ID()); err != nil {
		t.Fatal(err)
	}
	page, err := e.client.ReadStreamPage(ctx, run.ID(), sdk.StreamOptions{Namespace: "never"})
	if err != nil {
		t.Fatal(err)
	}
	if !page.Done || len(page.Chunks) != 0 {
		t.Errorf("page of a stream never written by a run at rest = %+v, want empty and done", page)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, err := range e.client.ReadStream(rctx, run.ID(), sdk.StreamOptions{Namespace: "never"}) {
		t.Fatalf("ReadStream of a stream never written: %v, want it to end with no chunk", err)
	}
	if rctx.Err() != nil {
		t.Fatal("ReadStream waited for its context to end")
	}
}
