package sdk_test

import (
	"context"
	"errors"
	"github.com/skeinflow/skein/internal/knobs"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// TestCompensationSurvivesRestart: the process goes away while the saga's
// first compensation (of b) is in progress, for a workflow that compensates
// itself (Compensate) and for one compensated after its failure
// (WithCompensateOnFailure); a new worker on the same store takes the
// compensation over once its lease has expired and finishes the saga. Each
// compensation takes effect once, in reverse order, and is recorded once:
// b's second comp_started takes over the first (Interrupted), and each
// step has one comp_succeeded.
func TestCompensationSurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, auto := range []bool{false, true} {
		name := map[bool]string{false: "explicit", true: "on failure"}[auto]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testCompensationRestart(t, auto)
		})
	}
}

func testCompensationRestart(t *testing.T, auto bool) {
	path := filepath.Join(t.TempDir(), "skein.db")
	j := &journal{}
	var first atomic.Bool // the first process's attempt of undo-b hangs
	first.Store(true)
	started := make(chan struct{}, 1)
	opts := sdk.StepOptions{MaxRetries: 5, Backoff: func(int) time.Duration { return 20 * time.Millisecond }}
	var steps []*sdk.Step[string, string]
	var defs []sdk.Definition
	for _, x := range []string{"a", "b", "c"} {
		undo := sdk.NewStep("rs-undo-"+x, func(ctx context.Context, c sdk.Compensation[string, string]) (struct{}, error) {
			if x == "b" && first.Load() {
				started <- struct{}{}
				<-ctx.Done() // killed mid-compensation
				return struct{}{}, ctx.Err()
			}
			j.add("undo " + c.Result)
			return struct{}{}, nil
		}, opts)
		step := sdk.NewStep("rs-"+x, func(ctx context.Context, in string) (string, error) {
			if x == "c" {
				return "", sdk.Fatal(errors.New("out of stock"))
			}
			return x + "-done", nil
		})
		steps = append(steps, sdk.WithCompensation(step, undo))
		defs = append(defs, undo, step)
	}
	saga := sdk.New("rs-saga", func(ctx sdk.Context, in string) (string, error) {
		for _, s := range steps {
			if _, err := s.Call(ctx, in); err != nil {
				if auto {
					return "", err
				}
				return "rolled back", sdk.Compensate(ctx)
			}
		}
		return "done", nil
	})
	if auto {
		saga = saga.WithCompensateOnFailure()
	}
	defs = append(defs, saga)
	start := func() (*localworld.World, *sdk.Client, func()) {
		lw, err := localworld.Open(localworld.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		reg := sdk.NewRegistry().MustRegister(defs...)
		// The new process takes the compensation over once the dead one's
		// step lease has expired; a live one renews it every second, so a
		// 3s lease lapses under it only if the machine stalls for 2s.
		w, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Registry: reg,
			Engine: sdk.EngineOptions{StepLeaseTTL: 3 * time.Second}}, knobs.WithPollWait(50*time.Millisecond), knobs.WithRunPollInterval(20*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		return lw, w.Client(), func() { cancel(); <-done; _ = lw.Close() }
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	_, client, stop := start()
	run, err := saga.Start(ctx, client, "order")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("b's compensation never started")
	}
	stop() // the process goes away during the compensation of b
	first.Store(false)

	lw, client, stop := start()
	defer stop()
	out, err := saga.Get(client, run.ID()).Result(ctx)
	switch {
	case auto && (err == nil || !strings.Contains(err.Error(), "out of stock")):
		t.Fatalf("saga = %q, %v, want the failure of rs-c", out, err)
	case !auto && (err != nil || out != "rolled back"):
		t.Fatalf("saga = %q, %v", out, err)
	}
	info, err := client.WaitDeactivated(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if c := info.Compensations; c.Succeeded != 2 || c.Failed != 0 || c.Status() != world.StepStatusCompensated {
		t.Errorf("Compensations = %+v", c)
	}
	if got, want := j.lines(), []string{"undo b-done", "undo a-done"}; !slices.Equal(got, want) {
		t.Errorf("journal = %q, want %q", got, want)
	}
	p, err := lw.ListEvents(ctx, &world.ListEventsParams{RunID: run.ID(), Pagination: world.Pagination{Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"comp_started rs-b", "comp_started rs-b", "comp_succeeded rs-b", "comp_started rs-a", "comp_succeeded rs-a"}
	if got := compTrail(p.Items); !slices.Equal(got, want) {
		t.Errorf("comp trail = %q, want %q", got, want)
	}
	for _, ev := range p.Items {
		if d, ok := ev.Data.(*world.CompStarted); ok && d.StepName == "rs-b" && d.Attempt == 2 && d.Interrupted != 1 {
			t.Errorf("b's second comp_started = %+v, want the first attempt interrupted", d)
		}
	}
}
