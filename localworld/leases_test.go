package localworld

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

func TestRunLease(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		clock := newFakeClock()
		cfg := m.config(t)
		w := mustOpen(t, cfg, knobs.WithNow(clock.Now))
		runID := testIDs.New(world.PrefixRun)
		a := &world.RunLeaseParams{RunID: runID, Owner: "a", TTL: 10 * time.Second}
		b := &world.RunLeaseParams{RunID: runID, Owner: "b", TTL: 10 * time.Second}

		l, err := w.AcquireRunLease(ctx, a)
		if err != nil || l.Owner != "a" || !l.ExpiresAt.Equal(clock.Now().Add(10*time.Second)) {
			t.Fatalf("acquire: %+v, %v", l, err)
		}
		_, err = w.AcquireRunLease(ctx, b)
		var held *world.RefusalError
		if !errors.As(err, &held) || held.Kind != world.ErrLeaseHeld || held.Holder != "a" || world.Status(err) != 409 {
			t.Fatalf("acquire held lease: %v", err)
		}
		if _, err := w.RenewRunLease(ctx, b); !errors.Is(err, world.ErrLeaseLost) {
			t.Fatalf("renew by non-holder: %v", err)
		}
		// Re-entrant for the holder, extending.
		clock.Advance(5 * time.Second)
		if l, err = w.AcquireRunLease(ctx, a); err != nil || !l.ExpiresAt.Equal(clock.Now().Add(10*time.Second)) {
			t.Fatalf("re-acquire: %+v, %v", l, err)
		}
		if l, err = w.RenewRunLease(ctx, a); err != nil || !l.ExpiresAt.Equal(clock.Now().Add(10*time.Second)) {
			t.Fatalf("renew: %+v, %v", l, err)
		}
		// Tolerant release by a non-holder: nothing changes.
		if err := w.ReleaseRunLease(ctx, b); err != nil {
			t.Fatalf("release by non-holder: %v", err)
		}
		if _, err := w.AcquireRunLease(ctx, b); !errors.As(err, &held) {
			t.Fatalf("non-holder release freed the lease: %v", err)
		}
		// Expiry: the holder has lost it, another owner takes it.
		clock.Advance(11 * time.Second)
		if _, err := w.RenewRunLease(ctx, a); !errors.Is(err, world.ErrLeaseLost) {
			t.Fatalf("renew after expiry: %v", err)
		}
		if _, err := w.AcquireRunLease(ctx, b); err != nil {
			t.Fatalf("acquire expired lease: %v", err)
		}
		if err := w.ReleaseRunLease(ctx, a); err != nil {
			t.Fatalf("release of a lost lease: %v", err)
		}
		if err := w.ReleaseRunLease(ctx, b); err != nil {
			t.Fatalf("release: %v", err)
		}
		if _, err := w.AcquireRunLease(ctx, a); err != nil {
			t.Fatalf("acquire after release: %v", err)
		}
		// Default TTL and bad input.
		if l, err := w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: testIDs.New(world.PrefixRun), Owner: "x"}); err != nil || !l.ExpiresAt.Equal(clock.Now().Add(world.DefaultRunLease)) {
			t.Fatalf("default TTL: %+v, %v", l, err)
		}
		_, err = w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: runID})
		wantErrIs(t, err, world.ErrInvalid, "no owner")
	})
}

func TestRunLeaseRace(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		w := mustOpen(t, m.config(t))
		runID := testIDs.New(world.PrefixRun)
		errs := make(chan error, 8)
		for i := range 8 {
			go func() {
				_, err := w.AcquireRunLease(context.Background(), &world.RunLeaseParams{RunID: runID, Owner: string(rune('a' + i)), TTL: time.Minute})
				errs <- err
			}()
		}
		wins := 0
		for range 8 {
			if err := <-errs; err == nil {
				wins++
			} else if !errors.Is(err, world.ErrLeaseHeld) {
				t.Fatalf("loser: %v", err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d owners acquired the lease", wins)
		}
	})
}

func TestRenewStepLease(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		clock := newFakeClock()
		cfg := m.config(t)
		w := mustOpen(t, cfg, knobs.WithNow(clock.Now))
		runID := newRun(t, w, "wf")
		stepID := testIDs.New(world.PrefixStep)
		p := &world.RenewStepLeaseParams{RunID: runID, StepID: stepID, Attempt: 1, TTL: time.Minute}
		_, err := w.RenewStepLease(ctx, p)
		wantErrIs(t, err, world.ErrNotFound, "missing step")
		mustAppend(t, w, runID, ev(stepID, &world.StepCreated{StepName: "s"}))
		_, err = w.RenewStepLease(ctx, p)
		wantErrIs(t, err, world.ErrConflict, "pending step")
		mustAppend(t, w, runID, ev(stepID, &world.StepStarted{LeaseTTL: time.Second}))
		clock.Advance(500 * time.Millisecond)
		st, err := w.RenewStepLease(ctx, p)
		if err != nil || !st.LeaseExpiresAt.Equal(clock.Now().Add(time.Minute)) {
			t.Fatalf("renew: %+v, %v", st, err)
		}
		// The renewed lease keeps a second start out.
		clock.Advance(2 * time.Second)
		_, err = w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{ev(stepID, &world.StepStarted{})}})
		var leased *world.RefusalError
		if !errors.As(err, &leased) || leased.Kind != world.ErrConflict || leased.Attempt != 1 {
			t.Fatalf("start during renewed lease: %v", err)
		}
		_, err = w.RenewStepLease(ctx, &world.RenewStepLeaseParams{RunID: runID, StepID: stepID, Attempt: 2})
		wantErrIs(t, err, world.ErrConflict, "wrong attempt")
	})
}

// A durable store's lock proves that whoever held it before is gone, so
// Open expires the run and step leases it left, at once, instead of making
// the restart wait them out.
func TestOpenExpiresStaleLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "world.db")
	cfg := Config{Path: path}
	w := mustOpen(t, cfg)
	runID := newRun(t, w, "wf")
	stepID := testIDs.New(world.PrefixStep)
	mustAppend(t, w, runID, ev(stepID, &world.StepCreated{StepName: "s"}), ev(stepID, &world.StepStarted{LeaseTTL: time.Hour}))
	if _, err := w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: runID, Owner: "dead", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// An ended run's step is left as it is.
	doneID := newRun(t, w, "wf")
	doneStep := testIDs.New(world.PrefixStep)
	mustAppend(t, w, doneID, ev(doneStep, &world.StepCreated{StepName: "s"}), ev(doneStep, &world.StepStarted{LeaseTTL: time.Hour}),
		ev("", &world.RunCancelled{}))
	_ = w.Close() // the process that held them is gone

	var logs lockedBuilder
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	start := time.Now()
	w = mustOpen(t, cfg)
	if !strings.Contains(logs.String(), "expired the leases") || !strings.Contains(logs.String(), "runLeases=1 stepLeases=1") {
		t.Fatalf("log: %q", logs.String())
	}
	if _, err := w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: runID, Owner: "new", TTL: time.Minute}); err != nil {
		t.Fatalf("acquire after reopening: %v", err)
	}
	if _, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{ev(stepID, &world.StepStarted{})}}); err != nil {
		t.Fatalf("restart the step after reopening: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %s", took)
	}
	st, err := w.GetStep(ctx, &world.GetStepParams{RunID: doneID, StepID: doneStep})
	if err != nil || st.LeaseExpiresAt.Before(start.Add(50*time.Minute)) {
		t.Fatalf("the ended run's step: %+v, %v", st, err)
	}
	_ = w.Close()

	// Once they are expired (this Open expires the two just taken),
	// Open has nothing to do and writes nothing.
	w = mustOpen(t, Config{Path: path})
	_ = w.Close()
	before, _ := os.ReadFile(path)
	w = mustOpen(t, Config{Path: path})
	after, _ := os.ReadFile(path)
	_ = w.Close()
	if !bytes.Equal(before, after) {
		t.Fatal("Open wrote to a store with nothing to expire")
	}
}

// TestOpenExpiresStaleCompensationLeases: a compensation under way when
// the process died (of a failed run compensating after its end, or of a
// running run compensating itself) is taken over at once after a reopen,
// not when its lease runs out.
func TestOpenExpiresStaleCompensationLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := Config{Path: filepath.Join(t.TempDir(), "world.db")}
	w := mustOpen(t, cfg)
	compensating := func(end bool) (string, string) {
		runID := newRun(t, w, "wf")
		stepID := testIDs.New(world.PrefixStep)
		mustAppend(t, w, runID, ev(stepID, &world.StepCreated{StepName: "charge", Compensation: "refund"}),
			ev(stepID, &world.StepStarted{}), ev(stepID, &world.StepCompleted{}))
		if end {
			mustAppend(t, w, runID, ev("", &world.RunFailed{Error: &world.ErrorData{Message: "boom"}, Compensate: true}))
		}
		mustAppend(t, w, runID, ev(stepID, &world.CompStarted{LeaseTTL: time.Hour}))
		return runID, stepID
	}
	failedRun, failedStep := compensating(true)
	liveRun, liveStep := compensating(false)
	_ = w.Close() // the process that held them is gone

	w = mustOpen(t, cfg)
	defer w.Close()
	for _, c := range [][2]string{{failedRun, failedStep}, {liveRun, liveStep}} {
		res, err := w.Append(ctx, &world.AppendParams{RunID: c[0], Events: []world.EventInput{ev(c[1], &world.CompStarted{})}})
		if err != nil {
			t.Fatalf("take the compensation of run %s over after reopening: %v", c[0], err)
		}
		if d := res.Results[0].Event.Data.(*world.CompStarted); d.Attempt != 2 || d.Interrupted != 1 {
			t.Errorf("takeover: attempt %d interrupted %d, want 2 and 1", d.Attempt, d.Interrupted)
		}
	}
}
