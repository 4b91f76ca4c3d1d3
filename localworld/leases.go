package localworld

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/skeinflow/skein/world"
)

// runLease is a run lease as stored.
type runLease struct {
	Owner     string    `json:"owner"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func leaseKey(runID string) []byte { return newKey().raw(runID) }

func getLease(tx kvTx, runID string) (*runLease, error) {
	return getJSON[runLease](tx, bLeases, leaseKey(runID))
}

func (w *store) leaseParams(p *world.RunLeaseParams) (time.Duration, error) {
	return p.LeaseTTL(world.DefaultRunLease)
}

// AcquireRunLease takes the run's lease for p.Owner until now+TTL. It fails
// fast with a *world.RefusalError of world.ErrLeaseHeld (Holder, Until)
// while another owner's lease is unexpired; the holder acquiring again extends its lease.
func (w *store) AcquireRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	return w.setRunLease(ctx, p, func(cur *runLease, now time.Time) error {
		if cur != nil && cur.Owner != p.Owner && cur.ExpiresAt.After(now) {
			return leaseHeld(p.RunID, cur.Owner, cur.ExpiresAt)
		}
		return nil
	})
}

// RenewRunLease extends a lease p.Owner holds and that has not expired;
// otherwise it fails with world.ErrLeaseLost.
func (w *store) RenewRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	return w.setRunLease(ctx, p, func(cur *runLease, now time.Time) error {
		if cur == nil || cur.Owner != p.Owner || !cur.ExpiresAt.After(now) {
			return fmt.Errorf("%w: run %s, owner %s", world.ErrLeaseLost, p.RunID, p.Owner)
		}
		return nil
	})
}

// setRunLease writes p.Owner's lease on the run until now+TTL, in one
// update, when check accepts the lease it finds (nil: none) at that time.
func (w *store) setRunLease(ctx context.Context, p *world.RunLeaseParams, check func(cur *runLease, now time.Time) error) (*world.RunLease, error) {
	ttl, err := w.leaseParams(p)
	if err != nil {
		return nil, err
	}
	var out *world.RunLease
	err = w.update(ctx, func(tx kvTx) error {
		now := w.now()
		cur, err := getLease(tx, p.RunID)
		if err != nil {
			return err
		}
		if err := check(cur, now); err != nil {
			return err
		}
		out, err = putLease(tx, p.RunID, p.Owner, now.Add(ttl))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReleaseRunLease deletes the lease if p.Owner holds it. Releasing a lease
// that expired, was taken over or never existed is not an error.
func (w *store) ReleaseRunLease(ctx context.Context, p *world.RunLeaseParams) error {
	if _, err := w.leaseParams(p); err != nil {
		return err
	}
	return w.update(ctx, func(tx kvTx) error {
		cur, err := getLease(tx, p.RunID)
		if err != nil || cur == nil || cur.Owner != p.Owner {
			return err
		}
		return tx.del(bLeases, leaseKey(p.RunID))
	})
}

func putLease(tx kvTx, runID, owner string, expires time.Time) (*world.RunLease, error) {
	b, err := encode(runLease{Owner: owner, ExpiresAt: expires})
	if err != nil {
		return nil, err
	}
	if err := tx.put(bLeases, leaseKey(runID), b); err != nil {
		return nil, err
	}
	return &world.RunLease{RunID: runID, Owner: owner, ExpiresAt: expires}, nil
}

// RenewStepLease extends the execution lease of a running step's current
// attempt (or with p.Compensation, of its compensation's running attempt)
// to now+TTL (world.DefaultStepLease when zero). It fails with
// world.ErrNotFound for a missing step and world.ErrConflict when the step is
// not running p.Attempt. No event is appended: the lease bounds an attempt
// the log already records.
func (w *store) RenewStepLease(ctx context.Context, p *world.RenewStepLeaseParams) (*world.Step, error) {
	switch {
	case p == nil || p.RunID == "" || p.StepID == "":
		return nil, invalid("run and step IDs required")
	case p.TTL < 0:
		return nil, invalid("step lease: negative TTL %s", p.TTL)
	}
	ttl := p.TTL
	if ttl == 0 {
		ttl = world.DefaultStepLease
	}
	var out *world.Step
	err := w.update(ctx, func(tx kvTx) error {
		now := w.now()
		st, err := getStep(tx, p.RunID, p.StepID)
		if err != nil {
			return err
		}
		if st == nil {
			return fmt.Errorf("%w: step %s of run %s", world.ErrNotFound, p.StepID, p.RunID)
		}
		switch {
		case p.Compensation:
			if !p.CompLeaseRenewable(st) {
				return compNotRenewable(p, st)
			}
			c := *st.Compensation
			c.LeaseExpiresAt = now.Add(ttl)
			st.Compensation = &c
		case st.Status != world.StepStatusRunning || st.Attempt != p.Attempt:
			return fmt.Errorf("%w: step %s is %s at attempt %d, not running attempt %d", world.ErrConflict, p.StepID, st.Status, st.Attempt, p.Attempt)
		default:
			st.LeaseExpiresAt = now.Add(ttl)
		}
		st.UpdatedAt = now
		if err := putStep(tx, st, false, 0); err != nil {
			return err
		}
		out = st
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// staleLease reports whether st holds an execution lease at now: a
// running step's attempt, or a compensation's.
func staleLease(st *world.Step, now time.Time) bool {
	switch st.Status {
	case world.StepStatusRunning:
		return st.LeaseExpiresAt.After(now)
	case world.StepStatusCompensating:
		return st.Compensation != nil && st.Compensation.LeaseExpiresAt.After(now)
	}
	return false
}

// expireStaleLeases runs when a durable World opens. The store's lock
// proves that the process that held it before is gone, and with it every
// owner of a run lease or of a running step's execution lease: they are
// stale, and waiting them out (30s for a run lease, a minute for a step
// under the engine's defaults) would only delay the restart's recovery: the
// engine goes by a step's current lease, not by the expiry its step_started
// recorded, and takes such a step up at once. It sets every unexpired
// run lease, the lease of every running step of a pending, running or
// held run, and the lease of every compensation under way (of such a run,
// or of a failed or cancelled one still compensating) to expire now, in
// one transaction, and logs what it did. A store with nothing to expire is
// not written to.
func (w *store) expireStaleLeases() error {
	var runs []string
	var steps []*world.Step
	find := func(tx kvTx) error {
		runs, steps = nil, nil
		now := w.now()
		var scanErr error
		err := tx.scan(bLeases, nil, nil, false, func(k, v []byte) bool {
			var l runLease
			if scanErr = decode(bLeases, k, v, &l); scanErr != nil {
				return false
			}
			if l.ExpiresAt.After(now) {
				runs = append(runs, string(k))
			}
			return true
		})
		if err == nil {
			err = scanErr
		}
		if err != nil {
			return err
		}
		for _, status := range []world.RunStatus{world.RunStatusPending, world.RunStatusRunning, world.RunStatusHeld,
			world.RunStatusFailed, world.RunStatusCancelled} {
			prefix := newKey().str(string(status))
			var ids []string
			err := tx.scan(bRunsByStatus, prefix, prefixEnd(prefix), false, func(k, _ []byte) bool {
				if _, id, ok := readU64(k[len(prefix):]); ok {
					ids = append(ids, string(id))
				}
				return true
			})
			if err != nil {
				return err
			}
			for _, id := range ids {
				if status.Terminal() {
					// A finished run holds leases only while it compensates.
					r, err := getRun(tx, id)
					if err != nil {
						return err
					}
					if r == nil || r.Deactivated() || r.Compensations.Running == 0 {
						continue
					}
				}
				sp := newKey().str(id)
				err := tx.scan(bSteps, sp, prefixEnd(sp), false, func(k, v []byte) bool {
					var st world.Step
					if scanErr = decode(bSteps, k, v, &st); scanErr != nil {
						return false
					}
					if staleLease(&st, now) {
						steps = append(steps, &st)
					}
					return true
				})
				if err == nil {
					err = scanErr
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := w.kv.view(find); err != nil || len(runs)+len(steps) == 0 {
		return err
	}
	err := w.kv.update(func(tx kvTx) error {
		if err := find(tx); err != nil {
			return err
		}
		now := w.now()
		for _, runID := range runs {
			l, err := getLease(tx, runID)
			if err != nil {
				return err
			}
			if _, err := putLease(tx, runID, l.Owner, now); err != nil {
				return err
			}
		}
		for _, st := range steps {
			if st.Status == world.StepStatusCompensating {
				st.Compensation.LeaseExpiresAt = now
			} else {
				st.LeaseExpiresAt = now
			}
			st.UpdatedAt = now
			if err := putStep(tx, st, false, 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.logger.LogAttrs(context.Background(), slog.LevelInfo, "localworld: expired the leases the previous process left",
		slog.String("path", w.cfg.Path), slog.Int("runLeases", len(runs)), slog.Int("stepLeases", len(steps)))
	return nil
}

// compNotRenewable is the conflict of a compensation lease renewal refused
// on st.
func compNotRenewable(p *world.RenewStepLeaseParams, st *world.Step) error {
	attempt, state := 0, "no attempt running"
	if c := st.Compensation; c != nil {
		attempt = c.Attempt
		if !c.LeaseExpiresAt.IsZero() {
			state = "an attempt running"
		}
	}
	return fmt.Errorf("%w: step %s is %s at compensation attempt %d (%s), not running compensation attempt %d",
		world.ErrConflict, p.StepID, st.Status, attempt, state, p.Attempt)
}

// leaseHeld is AcquireRunLease's refusal of runID's lease, which owner
// holds until until.
func leaseHeld(runID, owner string, until time.Time) error {
	return &world.RefusalError{Kind: world.ErrLeaseHeld, Entity: runID, Holder: owner, Until: until,
		Reason: fmt.Sprintf("leased by %s until %s", owner, until.UTC().Format(time.RFC3339Nano))}
}
