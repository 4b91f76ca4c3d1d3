package worldtest

import (
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func leaseCases() []testCase {
	return []testCase{
		{"acquire_fails_fast", testLeaseFailFast},
		{"reacquire_extends", testLeaseReacquire},
		{"release_frees", testLeaseRelease},
		{"release_tolerant", testLeaseReleaseTolerant},
		{"expiry_lets_another_owner_take", testLeaseExpiry},
		{"renew", testLeaseRenew},
		{"renew_lost_lease", testLeaseRenewLost},
		{"lapsed_holder_commit_fenced", testLeaseLapsedHolderFenced},
		{"step_lease_renew", testStepLeaseRenew},
		{"step_lease_renew_refusals", testStepLeaseRenewRefused},
	}
}

func (f *fixture) acquire(run, owner string, ttl time.Duration) (*world.RunLease, error) {
	return f.w.AcquireRunLease(f.ctx, &world.RunLeaseParams{RunID: run, Owner: owner, TTL: ttl})
}

func (f *fixture) mustAcquire(run, owner string, ttl time.Duration) *world.RunLease {
	f.t.Helper()
	before := f.now()
	l, err := f.acquire(run, owner, ttl)
	if err != nil {
		f.t.Fatalf("AcquireRunLease(%s, %s): %v", run, owner, err)
	}
	if l == nil || l.RunID != run || l.Owner != owner {
		f.t.Fatalf("AcquireRunLease(%s, %s): got %+v", run, owner, l)
	}
	if l.ExpiresAt.Before(before.Add(ttl-skew)) || l.ExpiresAt.After(f.now().Add(ttl+skew)) {
		f.t.Fatalf("AcquireRunLease with TTL %v: ExpiresAt %v, want about %v", ttl, l.ExpiresAt, before.Add(ttl))
	}
	return l
}

// wantHeld checks that owner cannot take the lease because holder has it.
func (f *fixture) wantHeld(run, owner, holder, what string) {
	f.t.Helper()
	_, err := f.acquire(run, owner, time.Minute)
	e := wantRefusal(f.t, err, world.ErrLeaseHeld, "%s: AcquireRunLease by %s", what, owner)
	if e.Holder != holder || e.Entity != run {
		f.t.Fatalf("%s: refusal = %+v, want run %s held by %s", what, e, run, holder)
	}
}

func testLeaseFailFast(t *testing.T, f *fixture) {
	run := f.startedRun()
	l := f.mustAcquire(run, "a", longTTL)
	start := time.Now()
	_, err := f.acquire(run, "b", time.Minute)
	e := wantRefusal(t, err, world.ErrLeaseHeld, "AcquireRunLease of a held lease")
	// Real time is the subject: failing fast, not waiting out the hour.
	if took := time.Since(start); took > f.d(30*time.Second) {
		t.Fatalf("AcquireRunLease of a held lease took %v; it must fail fast, not wait", took)
	}
	if e.Holder != "a" || e.Entity != run || !sameTime(e.Until, l.ExpiresAt) {
		t.Fatalf("refusal = %+v, want run %s held by a until %v", e, run, l.ExpiresAt)
	}
	if world.Status(err) != 409 {
		t.Fatalf("held lease: status %d, want 409", world.Status(err))
	}
	// Leases are per run.
	f.mustAcquire(f.startedRun(), "b", time.Minute)
}

func testLeaseReacquire(t *testing.T, f *fixture) {
	run := f.startedRun()
	short := f.mustAcquire(run, "a", shortTTL)
	long := f.mustAcquire(run, "a", longTTL)
	if !long.ExpiresAt.After(short.ExpiresAt) {
		t.Fatalf("re-acquiring by the same owner: ExpiresAt %v, want later than %v", long.ExpiresAt, short.ExpiresAt)
	}
	f.advancePast(short.ExpiresAt)
	f.wantHeld(run, "b", "a", "after the first TTL, the extended lease")
}

func testLeaseRelease(t *testing.T, f *fixture) {
	run := f.startedRun()
	f.mustAcquire(run, "a", time.Minute)
	if err := f.w.ReleaseRunLease(f.ctx, &world.RunLeaseParams{RunID: run, Owner: "a"}); err != nil {
		t.Fatalf("ReleaseRunLease by the holder: %v", err)
	}
	f.mustAcquire(run, "b", time.Minute)
	_, err := f.w.RenewRunLease(f.ctx, &world.RunLeaseParams{RunID: run, Owner: "a", TTL: time.Minute})
	wantErr(t, err, world.ErrLeaseLost, "RenewRunLease after releasing")
}

func testLeaseReleaseTolerant(t *testing.T, f *fixture) {
	run := f.startedRun()
	f.mustAcquire(run, "a", time.Minute)
	if err := f.w.ReleaseRunLease(f.ctx, &world.RunLeaseParams{RunID: run, Owner: "b"}); err != nil {
		t.Fatalf("ReleaseRunLease by a non-owner: %v, want nil", err)
	}
	f.wantHeld(run, "c", "a", "after a non-owner's release")
	// A lease never taken can be released.
	if err := f.w.ReleaseRunLease(f.ctx, &world.RunLeaseParams{RunID: f.startedRun(), Owner: "a"}); err != nil {
		t.Fatalf("ReleaseRunLease of a lease never taken: %v, want nil", err)
	}
	// Releasing after expiry, when another owner took over, leaves the new holder alone.
	run = f.startedRun()
	l := f.mustAcquire(run, "a", shortTTL)
	f.advancePast(l.ExpiresAt)
	if err := f.w.ReleaseRunLease(f.ctx, &world.RunLeaseParams{RunID: run, Owner: "a"}); err != nil {
		t.Fatalf("ReleaseRunLease after expiry: %v, want nil", err)
	}
	f.mustAcquire(run, "b", time.Minute)
	if err := f.w.ReleaseRunLease(f.ctx, &world.RunLeaseParams{RunID: run, Owner: "a"}); err != nil {
		t.Fatalf("ReleaseRunLease by the expired owner: %v, want nil", err)
	}
	f.wantHeld(run, "c", "b", "after the expired owner released")
}

func testLeaseExpiry(t *testing.T, f *fixture) {
	run := f.startedRun()
	l := f.mustAcquire(run, "a", shortTTL)
	f.advancePast(l.ExpiresAt)
	f.mustAcquire(run, "b", time.Minute)
	_, err := f.w.RenewRunLease(f.ctx, &world.RunLeaseParams{RunID: run, Owner: "a", TTL: time.Minute})
	wantErr(t, err, world.ErrLeaseLost, "RenewRunLease by the owner whose lease expired and was taken")
	f.wantHeld(run, "a", "b", "the old owner re-acquiring")
}

func testLeaseRenew(t *testing.T, f *fixture) {
	run := f.startedRun()
	l := f.mustAcquire(run, "a", shortTTL)
	before := f.now()
	r, err := f.w.RenewRunLease(f.ctx, &world.RunLeaseParams{RunID: run, Owner: "a", TTL: longTTL})
	if err != nil {
		t.Fatalf("RenewRunLease by the holder: %v", err)
	}
	if r == nil || r.Owner != "a" || r.ExpiresAt.Before(before.Add(longTTL-skew)) {
		t.Fatalf("RenewRunLease: got %+v, want owner a until about %v", r, before.Add(longTTL))
	}
	f.advancePast(l.ExpiresAt)
	f.wantHeld(run, "b", "a", "after the original TTL, the renewed lease")
}

func testLeaseRenewLost(t *testing.T, f *fixture) {
	run := f.startedRun()
	_, err := f.w.RenewRunLease(f.ctx, &world.RunLeaseParams{RunID: run, Owner: "a", TTL: time.Minute})
	wantErr(t, err, world.ErrLeaseLost, "RenewRunLease of a lease never taken")
	f.mustAcquire(run, "b", time.Minute)
	_, err = f.w.RenewRunLease(f.ctx, &world.RunLeaseParams{RunID: run, Owner: "a", TTL: time.Minute})
	wantErr(t, err, world.ErrLeaseLost, "RenewRunLease of a lease another owner holds")
	f.wantHeld(run, "c", "b", "after a non-owner's renewal")
}

// testLeaseLapsedHolderFenced: Append takes no lease owner; what keeps a
// holder whose lease lapsed from committing over its successor is the
// fence on the log every commit of a session carries (IfLastSeq, the last
// event it knows). Once the new holder has committed, the old holder's
// fenced commit is refused and appends nothing, and its renewal is refused
// too (the engine's session stops on that, before it commits).
func testLeaseLapsedHolderFenced(t *testing.T, f *fixture) {
	run := f.startedRun()
	l := f.mustAcquire(run, "a", shortTTL)
	known := f.getRun(run).LastSeq // what a's session has loaded
	f.advancePast(l.ExpiresAt)
	f.mustAcquire(run, "b", time.Minute)
	if _, err := f.w.Append(f.ctx, &world.AppendParams{RunID: run, IfLastSeq: known, Events: []world.EventInput{
		ev(ids.New(world.PrefixWait), &world.WaitCreated{ResumeAt: f.now().Add(time.Hour)}),
	}}); err != nil {
		t.Fatalf("the new holder's fenced commit: %v", err)
	}
	before := f.events(run)
	_, err := f.w.Append(f.ctx, &world.AppendParams{RunID: run, IfLastSeq: known, Events: []world.EventInput{
		ev(ids.New(world.PrefixStep), &world.StepCreated{StepName: "late"}),
	}})
	wantErr(t, err, world.ErrConflict, "the lapsed holder's commit fenced on the log it knew")
	f.wantLogUnchanged(run, before, "the lapsed holder's refused commit")
	_, err = f.w.RenewRunLease(f.ctx, &world.RunLeaseParams{RunID: run, Owner: "a", TTL: time.Minute})
	wantErr(t, err, world.ErrLeaseLost, "the lapsed holder's renewal")
	f.wantHeld(run, "c", "b", "after the lapsed holder's refused commit")
}

func (f *fixture) renewStep(run, step string, attempt int, ttl time.Duration) (*world.Step, error) {
	return f.w.RenewStepLease(f.ctx, &world.RenewStepLeaseParams{RunID: run, StepID: step, Attempt: attempt, TTL: ttl})
}

func testStepLeaseRenew(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := f.createStep(run)
	s := f.startStep(run, step, shortTTL)
	before := f.now()
	r, err := f.renewStep(run, step, 1, longTTL)
	if err != nil {
		t.Fatalf("RenewStepLease of the running attempt: %v", err)
	}
	if r == nil || r.LeaseExpiresAt.Before(before.Add(longTTL-skew)) || r.Attempt != 1 || r.Status != world.StepStatusRunning {
		t.Fatalf("RenewStepLease: got %+v, want attempt 1 running until about %v", r, before.Add(longTTL))
	}
	if got := f.getStep(run, step); !sameTime(got.LeaseExpiresAt, r.LeaseExpiresAt) {
		t.Fatalf("GetStep after RenewStepLease: LeaseExpiresAt %v, want %v", got.LeaseExpiresAt, r.LeaseExpiresAt)
	}
	f.advancePast(s.LeaseExpiresAt)
	_, err = f.append(run, ev(step, &world.StepStarted{}))
	wantStepLeased(t, err, "step_started after the original lease, before the renewed one, expired")
	if got := f.getStep(run, step); got.Attempt != 1 {
		t.Fatalf("attempt %d after a refused restart, want 1", got.Attempt)
	}
}

func testStepLeaseRenewRefused(t *testing.T, f *fixture) {
	run := f.startedRun()
	_, err := f.renewStep(run, ids.New(world.PrefixStep), 1, time.Minute)
	wantErr(t, err, world.ErrNotFound, "RenewStepLease of a missing step")
	step := f.createStep(run)
	_, err = f.renewStep(run, step, 1, time.Minute)
	wantErr(t, err, world.ErrConflict, "RenewStepLease of a pending step")
	f.startStep(run, step, time.Minute)
	_, err = f.renewStep(run, step, 2, time.Minute)
	wantErr(t, err, world.ErrConflict, "RenewStepLease naming another attempt")
	f.mustAppend(run, ev(step, &world.StepRetrying{Error: stepError("x")}))
	f.startStep(run, step, time.Minute)
	_, err = f.renewStep(run, step, 1, time.Minute)
	wantErr(t, err, world.ErrConflict, "RenewStepLease of a superseded attempt")
	f.mustAppend(run, ev(step, &world.StepCompleted{}))
	_, err = f.renewStep(run, step, 2, time.Minute)
	wantErr(t, err, world.ErrConflict, "RenewStepLease of a completed step")
}
