package worldtest

import (
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// The compensation cases about renewing an attempt's lease
// (RenewStepLeaseParams.Compensation), see compensationCases.

func (f *fixture) renewComp(run, step string, attempt int, ttl time.Duration) (*world.Step, error) {
	return f.w.RenewStepLease(f.ctx, &world.RenewStepLeaseParams{RunID: run, StepID: step, Attempt: attempt, TTL: ttl, Compensation: true})
}

// testCompLeaseRenew: a renewed compensation lease holds off a takeover
// past the lease comp_started granted, and the attempt still records its
// outcome.
func testCompLeaseRenew(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := f.compensableStep(run)
	started := f.mustAppendOne(run, ev(step, &world.CompStarted{LeaseTTL: shortTTL}))
	granted := started.Step.Compensation.LeaseExpiresAt
	before := f.now()
	r, err := f.renewComp(run, step, 1, longTTL)
	if err != nil {
		t.Fatalf("RenewStepLease of the running compensation attempt: %v", err)
	}
	if r == nil || r.Status != world.StepStatusCompensating || r.Compensation == nil || r.Compensation.Attempt != 1 ||
		r.Compensation.LeaseExpiresAt.Before(before.Add(longTTL-skew)) {
		t.Fatalf("RenewStepLease: got %+v, want compensation attempt 1 running until about %v", r, before.Add(longTTL))
	}
	renewed := r.Compensation.LeaseExpiresAt
	if got := f.getStep(run, step); got.Compensation == nil || !sameTime(got.Compensation.LeaseExpiresAt, renewed) {
		t.Fatalf("GetStep after RenewStepLease: compensation %+v, want its lease until %v", got.Compensation, renewed)
	}
	f.advancePast(granted)
	logged := f.events(run)
	_, err = f.append(run, ev(step, &world.CompStarted{}))
	e := wantStepLeased(t, err, "comp_started after the granted lease, before the renewed one, expired")
	if e.Attempt != 1 || !sameTime(e.Until, renewed) {
		t.Fatalf("refusal = %+v, want attempt 1 until %v", e, renewed)
	}
	f.wantLogUnchanged(run, logged, "comp_started under a renewed lease")
	f.wantComp(run, step, world.StepStatusCompensating, 1, "a refused takeover")
	f.mustAppend(run, ev(step, &world.CompSucceeded{}))
	f.wantComp(run, step, world.StepStatusCompensated, 1, "comp_succeeded after renewals")
}

// testCompLeaseRenewRefused: only the running attempt of a compensating
// step is renewed.
func testCompLeaseRenewRefused(t *testing.T, f *fixture) {
	run := f.startedRun()
	_, err := f.renewComp(run, ids.New(world.PrefixStep), 1, time.Minute)
	wantErr(t, err, world.ErrNotFound, "compensation lease renewal of a missing step")
	plain := f.createStep(run)
	f.startStep(run, plain, time.Minute)
	_, err = f.renewComp(run, plain, 1, time.Minute)
	wantErr(t, err, world.ErrConflict, "compensation lease renewal of a running step")

	step := f.compensableStep(run)
	_, err = f.renewComp(run, step, 1, time.Minute)
	wantErr(t, err, world.ErrConflict, "compensation lease renewal of a completed step not compensating")
	f.mustAppend(run, ev(step, &world.CompStarted{LeaseTTL: time.Minute}))
	_, err = f.renewComp(run, step, 2, time.Minute)
	wantErr(t, err, world.ErrConflict, "compensation lease renewal naming another attempt")
	_, err = f.renewStep(run, step, 1, time.Minute)
	wantErr(t, err, world.ErrConflict, "step lease renewal of a compensating step")

	retry := f.now()
	f.mustAppend(run, ev(step, &world.CompRetryScheduled{Error: stepError("x"), RetryAfter: retry}))
	_, err = f.renewComp(run, step, 1, time.Minute)
	wantErr(t, err, world.ErrConflict, "compensation lease renewal while a retry is scheduled")
	if s := f.getStep(run, step); !s.Compensation.LeaseExpiresAt.IsZero() {
		t.Fatalf("a refused renewal left a lease on a scheduled retry: %+v", s.Compensation)
	}
	f.advancePast(retry)
	f.mustAppend(run, ev(step, &world.CompStarted{LeaseTTL: time.Minute}))
	if _, err := f.renewComp(run, step, 2, time.Minute); err != nil {
		t.Fatalf("compensation lease renewal of the retry's attempt: %v", err)
	}
	_, err = f.renewComp(run, step, 1, time.Minute)
	wantErr(t, err, world.ErrConflict, "compensation lease renewal of the attempt a retry followed")
	f.mustAppend(run, ev(step, &world.CompSucceeded{}))
	_, err = f.renewComp(run, step, 2, time.Minute)
	wantErr(t, err, world.ErrConflict, "compensation lease renewal of a compensated step")
}

// testCompLeaseSuperseded: once another executor took an expired attempt
// over, the old attempt's renewal is refused (its executor stops) and the
// new one's is not.
func testCompLeaseSuperseded(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := f.compensableStep(run)
	r := f.mustAppendOne(run, ev(step, &world.CompStarted{LeaseTTL: shortTTL}))
	f.advancePast(r.Step.Compensation.LeaseExpiresAt)
	f.mustAppend(run, ev(step, &world.CompStarted{LeaseTTL: time.Minute}))
	logged := f.events(run)
	_, err := f.renewComp(run, step, 1, time.Minute)
	wantErr(t, err, world.ErrConflict, "compensation lease renewal of a superseded attempt")
	f.wantLogUnchanged(run, logged, "a refused renewal")
	s, err := f.renewComp(run, step, 2, 2*time.Minute)
	if err != nil || s.Compensation.Attempt != 2 || s.Compensation.Interrupted != 1 {
		t.Fatalf("compensation lease renewal of the attempt that took over: %+v, %v", s, err)
	}
}
