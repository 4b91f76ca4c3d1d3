package localworld

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinflow/skein/world"
)

// Append applies p.Events to one run in a single write transaction: for each
// event it loads the state the state machine needs from the transaction (so
// an event sees the effects of the ones before it), calls world.Apply and
// writes the effect. The first refusal rolls the whole commit back and is
// returned: a *world.RefusalError names the refused event by its Index.
func (w *store) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	switch {
	case p == nil:
		return nil, invalid("nil AppendParams")
	case len(p.Events) == 0:
		return nil, invalid("append to run %q without events", p.RunID)
	case p.IfLastSeq < 0:
		return nil, invalid("negative IfLastSeq %d", p.IfLastSeq)
	}
	var res *world.AppendResult
	err := w.update(ctx, func(tx kvTx) error {
		var err error
		res, err = w.appendTx(tx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	w.signalCommit()
	return res, nil
}

func (w *store) appendTx(tx kvTx, p *world.AppendParams) (*world.AppendResult, error) {
	now := w.now()
	run, err := w.decoded.run(tx, p.RunID)
	if err != nil {
		return nil, err
	}
	if p.IfLastSeq > 0 {
		var last int64
		if run != nil {
			last = run.LastSeq
		}
		if last != p.IfLastSeq {
			return nil, fmt.Errorf("%w: run %s: last sequence is %d, not %d", world.ErrConflict, p.RunID, last, p.IfLastSeq)
		}
	}
	res := &world.AppendResult{Results: make([]world.EventResult, len(p.Events))}
	first, changed := run, false
	steps := &commitSteps{}
	for i, in := range p.Events {
		ev := world.Event{RunID: p.RunID, EventID: w.ids.New(world.PrefixEvent), CorrelationID: in.CorrelationID, Data: in.Data}
		// Apply validates too; checking first keeps loadState from reading
		// a malformed payload (a typed nil, say).
		if err := world.ValidateEvent(ev); err != nil {
			return nil, refusedAt(i, err)
		}
		st, err := w.loadState(tx, run, ev, steps)
		if err != nil {
			return nil, err
		}
		st.Limits = w.cfg.Limits
		eff, err := world.Apply(st, ev, now)
		if err != nil {
			return nil, refusedAt(i, err)
		}
		if !eff.Skip {
			if err := w.writeEffect(tx, st, eff, steps); err != nil {
				return nil, err
			}
			changed = true
			ev := eff.Event
			r := world.EventResult{Event: &ev, Step: eff.Step, Hook: eff.Hook, Wait: eff.Wait}
			if _, ok := ev.Data.(*world.HookReceived); ok && st.Hook != nil {
				// The hook is unchanged, so the effect does not carry it,
				// but the result reports the entity as the event left it.
				h := *st.Hook
				r.Hook = &h
			}
			res.Results[i] = r
		}
		run = eff.Run
	}
	// The run and each step are written once per commit, in their final
	// state: the events read them from run and steps, not from the store.
	if changed {
		if err := w.putSteps(tx, steps); err != nil {
			return nil, err
		}
		if err := putRun(tx, first, run); err != nil {
			return nil, err
		}
		w.decoded.wroteRun(tx, run)
		if err := putCommit(tx, first, run); err != nil {
			return nil, err
		}
	}
	res.Run = run
	return res, nil
}

// loadState reads what world.Apply needs to judge ev: the run (carried
// through the commit), the entity the correlation ID names, the token's
// holder and the idempotency key's run.
func (w *store) loadState(tx kvTx, run *world.Run, ev world.Event, steps *commitSteps) (world.State, error) {
	st := world.State{Run: run}
	corr := ev.CorrelationID
	var err error
	switch d := ev.Data.(type) {
	case *world.RunCreated:
		if d.IdempotencyKey != "" {
			var v []byte
			if v, err = tx.get(bRunIdem, runIdemKey(d.IdempotencyKey)); err != nil {
				return st, err
			}
			st.IdempotencyRunID = string(v)
		}
	case *world.HookCreated:
		// Hook IDs are global: an ID another run uses is a duplicate too.
		var h *storedHook
		if h, err = getHook(tx, corr); err == nil && h != nil {
			st.Hook = &h.Hook
		}
		if err == nil && d.Token != "" {
			var holder *storedHook
			if holder, err = getHookByToken(tx, d.Token); err == nil && holder != nil {
				st.TokenHolder = &holder.Hook
			}
		}
	case *world.HookReceived, *world.HookDisposed, *world.HookConflict:
		var h *storedHook
		if h, err = getHook(tx, corr); err == nil && h != nil && h.RunID == ev.RunID {
			st.Hook = &h.Hook
		}
	case *world.WaitCreated, *world.WaitCompleted:
		st.Wait, err = getWait(tx, ev.RunID, corr)
	default:
		if world.IsStepEvent(ev.Type()) {
			if st.Step = steps.get(corr); st.Step == nil {
				st.Step, err = w.decoded.step(tx, ev.RunID, corr)
			}
		}
	}
	return st, err
}

// writeEffect stores an accepted event and its effect, except the run and
// the steps, which appendTx writes once per commit.
func (w *store) writeEffect(tx kvTx, st world.State, eff world.Effect, steps *commitSteps) error {
	ev := eff.Event
	if err := putEncoded(tx, bEvents, eventKey(ev.RunID, ev.Seq), storedEventOf(&ev)); err != nil {
		return err
	}
	if ev.CorrelationID != "" {
		if err := indexCorrelation(tx, ev.CorrelationID, ev.RunID, ev.Seq); err != nil {
			return err
		}
	}
	if eff.Step != nil {
		steps.set(eff.Step, st.Step == nil, ev.Seq)
	}
	if eff.Hook != nil {
		if err := putHook(tx, &storedHook{Hook: *eff.Hook, Seq: ev.Seq}); err != nil {
			return err
		}
	}
	if eff.DeleteHookID != "" {
		h, err := getHook(tx, eff.DeleteHookID)
		if err != nil {
			return err
		}
		if h != nil {
			if err := deleteHook(tx, h); err != nil {
				return err
			}
		}
	}
	if eff.Wait != nil {
		b, err := encode(eff.Wait)
		if err != nil {
			return err
		}
		if err := tx.put(bWaits, waitKey(eff.Wait.RunID, eff.Wait.WaitID), b); err != nil {
			return err
		}
	}
	if eff.EndsRun {
		return endRun(tx, eff.Run.RunID)
	}
	return nil
}

// endRun deletes a finished run's active hooks, freeing their tokens, and
// its waits.
func endRun(tx kvTx, runID string) error {
	prefix := newKey().str(runID)
	var hookIDs []string
	err := tx.scan(bHooksByRun, prefix, prefixEnd(prefix), false, func(k, _ []byte) bool {
		if _, rest, ok := readU64(k[len(prefix):]); ok {
			hookIDs = append(hookIDs, string(rest))
		}
		return true
	})
	if err != nil {
		return err
	}
	for _, id := range hookIDs {
		h, err := getHook(tx, id)
		if err != nil {
			return err
		}
		if h != nil {
			if err := deleteHook(tx, h); err != nil {
				return err
			}
		}
	}
	var waitKeys [][]byte
	err = tx.scan(bWaits, prefix, prefixEnd(prefix), false, func(k, _ []byte) bool {
		waitKeys = append(waitKeys, append([]byte(nil), k...))
		return true
	})
	if err != nil {
		return err
	}
	for _, k := range waitKeys {
		if err := tx.del(bWaits, k); err != nil {
			return err
		}
	}
	return nil
}

// commitSteps are the steps a commit changes, in the order it first
// changes them, each as its last event left it: written once, at the end
// of the commit (a serial step's commit creates step k+1 and starts it).
type commitSteps struct {
	order []*commitStep
	byID  map[string]*commitStep
}

type commitStep struct {
	st      *world.Step
	created bool  // the commit created it
	seq     int64 // its step_created, when created
}

// get returns the step as the commit left it so far, or nil.
func (c *commitSteps) get(id string) *world.Step {
	if cs := c.byID[id]; cs != nil {
		return cs.st
	}
	return nil
}

// set records st as the commit leaves it; created (and seq) when the event
// at seq created it.
func (c *commitSteps) set(st *world.Step, created bool, seq int64) {
	if cs := c.byID[st.StepID]; cs != nil {
		cs.st = st
		return
	}
	if c.byID == nil {
		c.byID = map[string]*commitStep{}
	}
	cs := &commitStep{st: st, created: created, seq: seq}
	c.byID[st.StepID] = cs
	c.order = append(c.order, cs)
}

// putSteps writes the commit's steps.
func (w *store) putSteps(tx kvTx, steps *commitSteps) error {
	for _, cs := range steps.order {
		if err := putStep(tx, cs.st, cs.created, cs.seq); err != nil {
			return err
		}
		w.decoded.wroteStep(tx, cs.st)
	}
	return nil
}

func eventKey(runID string, seq int64) []byte { return newKey().str(runID).seq(seq) }
func runIdemKey(k string) []byte              { return newKey().raw(k) }
func waitKey(runID, waitID string) []byte     { return newKey().str(runID).raw(waitID) }

// storedEvent has the JSON shape of world.Event (which decodes it) but
// encodes the payload in the same pass, where Event.MarshalJSON encodes it
// and then re-validates it as a json.RawMessage.
type storedEvent struct {
	RunID         string          `json:"runId"`
	EventID       string          `json:"eventId"`
	Seq           int64           `json:"seq"`
	EventType     world.EventType `json:"eventType"`
	CorrelationID string          `json:"correlationId,omitempty"`
	CreatedAt     time.Time       `json:"createdAt"`
	EventData     world.EventData `json:"eventData,omitempty"`
}

// storedEventOf is e as stored.
func storedEventOf(e *world.Event) *storedEvent {
	return &storedEvent{
		RunID: e.RunID, EventID: e.EventID, Seq: e.Seq, EventType: e.Type(),
		CorrelationID: e.CorrelationID, CreatedAt: e.CreatedAt, EventData: e.Data,
	}
}

// refusedAt sets the Index of err, the refusal of p.Events[i], when it is
// a *world.RefusalError (a *world.LimitError has none).
func refusedAt(i int, err error) error {
	if re := (*world.RefusalError)(nil); errors.As(err, &re) {
		re.Index = i
	}
	return err
}
