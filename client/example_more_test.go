package client_test

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// serve runs a worker for defs on w until the returned function is called:
// a deploy of that code. cfg tunes the worker.
func serve(w world.World, cfg worker.Config, defs ...workflow.Definition) (*worker.Worker, func()) {
	cfg.World, cfg.Registry = w, workflow.NewRegistry().MustRegister(defs...)
	wk, err := worker.New(cfg)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	return wk, func() { cancel(); <-done }
}

var packParcel = workflow.NewStep("pack", func(ctx context.Context, id string) (string, error) { return "packed " + id, nil })
var weighParcel = workflow.NewStep("weigh", func(ctx context.Context, id string) (string, error) { return "weighed " + id, nil })

// shipping returns version v of a workflow that calls step, then waits for
// the carrier on a hook.
func shipping(step *workflow.Step[string, string]) *workflow.Workflow[string, string] {
	return workflow.New("ship", func(ctx workflow.Context, id string) (string, error) {
		done, err := step.Call(ctx, id)
		if err != nil {
			return "", err
		}
		carrier, err := workflow.NewHook[string](ctx, workflow.HookOptions{Token: "carrier/" + id}).Receive(ctx)
		return done + ", shipped with " + carrier, err
	})
}

var shipV1, shipV2 = shipping(packParcel), shipping(weighParcel)

func ExampleClient_RetryRun() {
	w, _ := localworld.Open(localworld.Config{})
	defer w.Close()
	ctx := context.Background()
	c, _ := client.New(client.Config{World: w})
	waitFor := func(cond func() bool) {
		for !cond() {
			time.Sleep(5 * time.Millisecond)
		}
	}

	// v1 packs the parcel, then waits for the carrier.
	_, stop := serve(w, worker.Config{}, shipV1, packParcel)
	run, _ := shipV1.Start(ctx, c, "45")
	waitFor(func() bool { _, err := c.GetHookByToken(ctx, "carrier/45"); return err == nil })
	stop()

	// A bad deploy: v2 weighs instead of packing, which the run's log does
	// not record. When the carrier's payload wakes the run, its replay
	// diverges, and the run is held: not failed, nothing more runs.
	_, stop = serve(w, worker.Config{}, shipV2, weighParcel)
	_, _ = c.ResumeHook(ctx, "carrier/45", "DHL")
	waitFor(func() bool {
		info, err := c.GetRun(ctx, run.ID())
		return err == nil && info.Status == world.RunStatusHeld
	})
	info, _ := c.GetRun(ctx, run.ID())
	fmt.Printf("%s by %s (ErrorCode %q)\n", info.Status, info.Hold.Code, info.ErrorCode)
	stop()

	// Deploy code that fits the log again and retry now instead of at the
	// next scheduled replay: the run goes on where it stopped.
	_, stop = serve(w, worker.Config{}, shipV1, packParcel)
	defer stop()
	if err := c.RetryRun(ctx, run.ID()); err != nil {
		panic(err)
	}
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	// Output:
	// held by REPLAY_DIVERGENCE (ErrorCode "")
	// packed 45, shipped with DHL <nil>
}
