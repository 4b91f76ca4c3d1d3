package localworld

import (
	"context"
	"fmt"
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
	k := leaseKey(runID)
	v := tx.get(bLeases, k)
	if v == nil {
		return nil, nil
	}
	var l runLease
	if err := decode(bLeases, k, v, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

func (w *World) leaseParams(p *world.RunLeaseParams) (time.Duration, error) {
	switch {
	case p == nil:
		return 0, invalid("nil RunLeaseParams")
	case p.RunID == "":
		return 0, invalid("run lease: run ID required")
	case p.Owner == "":
		return 0, invalid("run lease: owner required")
	case p.TTL < 0:
		return 0, invalid("run lease: negative TTL %s", p.TTL)
	case p.TTL == 0:
		return w.cfg.DefaultRunLeaseTTL, nil
	}
	return p.TTL, nil
}

// AcquireRunLease takes the run's lease for p.Owner until now+TTL. It fails
// fast with a *world.LeaseHeldError while another owner's lease is
// unexpired; the holder acquiring again extends its lease.
func (w *World) AcquireRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
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
		if cur != nil && cur.Owner != p.Owner && cur.ExpiresAt.After(now) {
			return &world.LeaseHeldError{RunID: p.RunID, Owner: cur.Owner, ExpiresAt: cur.ExpiresAt}
		}
		out, err = putLease(tx, p.RunID, p.Owner, now.Add(ttl))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RenewRunLease extends a lease p.Owner holds and that has not expired;
// otherwise it fails with world.ErrLeaseLost.
func (w *World) RenewRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
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
		if cur == nil || cur.Owner != p.Owner || !cur.ExpiresAt.After(now) {
			return fmt.Errorf("%w: run %s, owner %s", world.ErrLeaseLost, p.RunID, p.Owner)
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
func (w *World) ReleaseRunLease(ctx context.Context, p *world.RunLeaseParams) error {
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
// attempt to now+TTL (world.DefaultStepLease when zero). It fails with
// world.ErrNotFound for a missing step and world.ErrConflict when the step is
// not running p.Attempt. No event is appended: the lease bounds an attempt
// the log already records.
func (w *World) RenewStepLease(ctx context.Context, p *world.RenewStepLeaseParams) (*world.Step, error) {
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
		if st.Status != world.StepStatusRunning || st.Attempt != p.Attempt {
			return fmt.Errorf("%w: step %s is %s at attempt %d, not running attempt %d", world.ErrConflict, p.StepID, st.Status, st.Attempt, p.Attempt)
		}
		st.LeaseExpiresAt = now.Add(ttl)
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
