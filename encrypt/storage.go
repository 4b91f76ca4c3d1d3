package encrypt

import (
	"context"
	"errors"
	"log/slog"

	"github.com/skeinflow/skein/world"
)

// Append seals the events' payloads, appends them, and returns the result
// with its payloads opened again. A run_created draws the run's data key.
// What the World committed is opened with the key it was sealed with, so
// that a commit is never reported as an error after the fact.
func (w *sealedWorld) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	k, created, err := w.appendKey(ctx, p)
	if err != nil {
		return nil, err
	}
	sealed, err := sealEvents(p.RunID, k, p.Events)
	if err != nil {
		return nil, err
	}
	q := *p
	q.Events = sealed
	res, err := w.inner.Append(ctx, &q)
	if err != nil {
		return nil, err
	}
	if created {
		w.remember(p.RunID, k)
	}
	return w.openResult(res, k)
}

// appendKey is the data key p's events are sealed with: a new one when they
// create the run, else the run's own (nil for a run in clear).
func (w *sealedWorld) appendKey(ctx context.Context, p *world.AppendParams) (k *runKey, created bool, err error) {
	for _, ev := range p.Events {
		if _, ok := ev.Data.(*world.RunCreated); ok {
			k, err = w.newRunKey(ctx)
			return k, true, err
		}
	}
	k, err = w.runKey(ctx, p.RunID)
	if errors.Is(err, world.ErrNotFound) {
		return nil, false, nil // the World refuses the events itself
	}
	return k, false, err
}

// openResult opens what a commit of events sealed with k (nil: in clear)
// returned.
func (w *sealedWorld) openResult(res *world.AppendResult, k *runKey) (*world.AppendResult, error) {
	out := *res
	var err error
	if res.Run != nil {
		if out.Run, err = w.openRunWith(res.Run, k); err != nil {
			return nil, err
		}
	}
	out.Results = make([]world.EventResult, len(res.Results))
	for i, r := range res.Results {
		out.Results[i] = r
		if r.Event != nil {
			if out.Results[i].Event, err = w.openEventWith(r.Event, k); err != nil {
				return nil, err
			}
		}
		if r.Step != nil {
			if out.Results[i].Step, err = w.openStepWith(r.Step, k); err != nil {
				return nil, err
			}
		}
	}
	return &out, nil
}

// AppendFits is the wrapped World's limit for the events as they will be
// stored, sealed (sized with a stand-in key: no data key is drawn).
func (w *sealedWorld) AppendFits(events []world.EventInput) int {
	if _, ok := w.inner.(world.AppendLimiter); !ok {
		return len(events)
	}
	return world.AppendFits(w.inner, sizedLike(events))
}

// GetRun returns the run with its input and output opened.
func (w *sealedWorld) GetRun(ctx context.Context, p *world.GetRunParams) (*world.Run, error) {
	r, err := w.inner.GetRun(ctx, p)
	if err != nil {
		return nil, err
	}
	return w.openRun(ctx, r)
}

// ListRuns lists runs with their inputs and outputs opened (each run's data
// key is opened once, then cached). A run whose key is not available is
// listed with its payloads sealed, as stored: one unreadable run does not
// hide the others (GetRun of it is the *KeyError). A run whose payloads
// are damaged (ErrTampered) fails the listing: nothing is listed as data
// that the run's key did not seal.
func (w *sealedWorld) ListRuns(ctx context.Context, p *world.ListRunsParams) (*world.Page[world.Run], error) {
	page, err := w.inner.ListRuns(ctx, p)
	if err != nil {
		return nil, err
	}
	out := *page
	out.Items = make([]world.Run, len(page.Items))
	for i := range page.Items {
		r, err := w.openRun(ctx, &page.Items[i])
		switch {
		case isKeyError(err) && !errors.Is(err, ErrTampered):
			w.log.LogAttrs(ctx, slog.LevelWarn, "encrypt: a listed run stays sealed", slog.String("run", page.Items[i].RunID), slog.Any("err", err))
			r = &page.Items[i]
		case err != nil:
			return nil, err
		}
		out.Items[i] = *r
	}
	return &out, nil
}

// GetStep returns the step with its input and output opened.
func (w *sealedWorld) GetStep(ctx context.Context, p *world.GetStepParams) (*world.Step, error) {
	s, err := w.inner.GetStep(ctx, p)
	if err != nil {
		return nil, err
	}
	return w.openStep(ctx, s)
}

// ListSteps lists steps with their inputs and outputs opened.
func (w *sealedWorld) ListSteps(ctx context.Context, p *world.ListStepsParams) (*world.Page[world.Step], error) {
	page, err := w.inner.ListSteps(ctx, p)
	if err != nil {
		return nil, err
	}
	out := *page
	out.Items = make([]world.Step, len(page.Items))
	for i := range page.Items {
		s, err := w.openStep(ctx, &page.Items[i])
		if err != nil {
			return nil, err
		}
		out.Items[i] = *s
	}
	return &out, nil
}

// ListEvents lists events with their payloads opened.
func (w *sealedWorld) ListEvents(ctx context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	return w.openPage(ctx, func() (*world.Page[world.Event], error) { return w.inner.ListEvents(ctx, p) })
}

// ListEventsByCorrelation lists one step's, hook's or wait's events with
// their payloads opened.
func (w *sealedWorld) ListEventsByCorrelation(ctx context.Context, p *world.ListEventsByCorrelationParams) (*world.Page[world.Event], error) {
	return w.openPage(ctx, func() (*world.Page[world.Event], error) { return w.inner.ListEventsByCorrelation(ctx, p) })
}

func (w *sealedWorld) openPage(ctx context.Context, list func() (*world.Page[world.Event], error)) (*world.Page[world.Event], error) {
	page, err := list()
	if err != nil {
		return nil, err
	}
	items, err := w.openEvents(ctx, page.Items)
	if err != nil {
		return nil, err
	}
	out := *page
	out.Items = items
	return &out, nil
}

// RenewStepLease renews a step's lease; the step comes back opened.
func (w *sealedWorld) RenewStepLease(ctx context.Context, p *world.RenewStepLeaseParams) (*world.Step, error) {
	s, err := w.inner.RenewStepLease(ctx, p)
	if err != nil {
		return nil, err
	}
	return w.openStep(ctx, s)
}

// Hooks, waits and leases carry no payload: the wrapped World's own.

func (w *sealedWorld) GetHook(ctx context.Context, p *world.GetHookParams) (*world.Hook, error) {
	return w.inner.GetHook(ctx, p)
}

func (w *sealedWorld) GetHookByToken(ctx context.Context, p *world.GetHookByTokenParams) (*world.Hook, error) {
	return w.inner.GetHookByToken(ctx, p)
}

func (w *sealedWorld) ListHooks(ctx context.Context, p *world.ListHooksParams) (*world.Page[world.Hook], error) {
	return w.inner.ListHooks(ctx, p)
}

func (w *sealedWorld) AcquireRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	return w.inner.AcquireRunLease(ctx, p)
}

func (w *sealedWorld) RenewRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	return w.inner.RenewRunLease(ctx, p)
}

func (w *sealedWorld) ReleaseRunLease(ctx context.Context, p *world.RunLeaseParams) error {
	return w.inner.ReleaseRunLease(ctx, p)
}

// Close closes the wrapped World.
func (w *sealedWorld) Close() error { return w.inner.Close() }
