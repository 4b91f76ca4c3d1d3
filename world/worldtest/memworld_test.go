package worldtest_test

// memWorld is a minimal in-memory World built on world.Apply, used ONLY to
// test the conformance suite itself: Run must pass against it, and fail
// against each of its deliberately broken variants (the mutants in
// selftest_test.go). It is not evidence that any real World works.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skeinflow/skein/world"
)

type memWorld struct {
	mu   sync.Mutex
	bug  string // the mutant's injected bug; "" for the correct World
	ids  *world.IDSource
	now  func() time.Time // the clock of commits and leases (the suite's Clock)
	runs map[string]*memRun
	// runOrder lists run IDs in creation order.
	runOrder []string
	idem     map[string]string
	hooks    map[string]*world.Hook
	hookSeq  map[string]int64
	nextHook int64
	tokens   map[string]string // token -> hook ID
	leases   map[string]world.RunLease
	streams  map[string]map[string]*memStream
	changed  map[string]chan struct{}
	msgs     map[string]*memMsg
	msgOrder []string
	keys     map[string]string   // idempotency key -> message ID
	claims   map[string]memClaim // idempotency key -> claim never sent (abandonClaim)
	closed   bool
}

type memRun struct {
	run       world.Run
	events    []world.Event
	steps     map[string]*world.Step
	stepOrder []string
	waits     map[string]*world.Wait
}

type memStream struct {
	chunks [][]byte
	bytes  int64 // written (Limits.MaxStreamBytes)
	closed bool
}

type memMsg struct {
	id        string
	body      []byte
	visibleAt time.Time
	attempt   int
	receipt   string
	enqueued  time.Time
}

func newMemWorld(bug string) *memWorld {
	return &memWorld{
		bug: bug, ids: world.NewIDSource(nil, nil), now: time.Now,
		runs: map[string]*memRun{}, idem: map[string]string{},
		hooks: map[string]*world.Hook{}, hookSeq: map[string]int64{}, tokens: map[string]string{},
		leases: map[string]world.RunLease{}, streams: map[string]map[string]*memStream{},
		changed: map[string]chan struct{}{}, msgs: map[string]*memMsg{}, keys: map[string]string{},
		claims: map[string]memClaim{},
	}
}

var _ world.World = (*memWorld)(nil)

// Limits are small, for the suite to reach them.
func (w *memWorld) Limits() world.Limits {
	return world.Limits{MaxEvents: 1000, MaxPayload: 64 << 10, MaxStreamBytes: 256 << 10, MaxStreams: 16, MaxRunBytes: 4 << 20}.WithDefaults()
}

var _ world.Consumer = (*memWorld)(nil)
var _ world.StreamNotifier = (*memWorld)(nil)

func (w *memWorld) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return nil
}

func (w *memWorld) lock() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return world.ErrClosed
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// ---- Append ----

// memTx overlays one commit's writes on the World until it commits.
type memTx struct {
	w      *memWorld
	runID  string
	run    *world.Run
	events []world.Event
	steps  map[string]*world.Step
	waits  map[string]*world.Wait // nil: deleted
	hooks  map[string]*world.Hook // nil: deleted
	tokens map[string]string      // "": freed
	idem   string
	// newSteps lists the steps this commit creates, in order.
	newSteps []string
}

func (w *memWorld) begin(runID string) *memTx {
	tx := &memTx{w: w, runID: runID, steps: map[string]*world.Step{}, waits: map[string]*world.Wait{}, hooks: map[string]*world.Hook{}, tokens: map[string]string{}}
	if r := w.runs[runID]; r != nil {
		tx.run = ptr(r.run)
	}
	return tx
}

func (tx *memTx) step(id string) *world.Step {
	if s, ok := tx.steps[id]; ok {
		return s
	}
	if r := tx.w.runs[tx.runID]; r != nil {
		return r.steps[id]
	}
	return nil
}

func (tx *memTx) wait(id string) *world.Wait {
	if v, ok := tx.waits[id]; ok {
		return v
	}
	if r := tx.w.runs[tx.runID]; r != nil {
		return r.waits[id]
	}
	return nil
}

func (tx *memTx) anyHook(id string) *world.Hook {
	if h, ok := tx.hooks[id]; ok {
		return h
	}
	return tx.w.hooks[id]
}

func (tx *memTx) hook(id string) *world.Hook {
	if h := tx.anyHook(id); h != nil && h.RunID == tx.runID {
		return h
	}
	return nil
}

func (tx *memTx) tokenHolder(token string) *world.Hook {
	id, ok := tx.tokens[token]
	if !ok {
		id = tx.w.tokens[token]
	}
	if id == "" {
		return nil
	}
	return tx.anyHook(id)
}

func (tx *memTx) state(ev world.Event) world.State {
	s := world.State{Run: tx.run}
	corr := ev.CorrelationID
	switch {
	case strings.HasPrefix(corr, world.PrefixStep):
		s.Step = tx.step(corr)
	case strings.HasPrefix(corr, world.PrefixHook):
		s.Hook = tx.hook(corr)
	case strings.HasPrefix(corr, world.PrefixWait):
		s.Wait = tx.wait(corr)
	}
	switch d := ev.Data.(type) {
	case *world.HookCreated:
		if tx.w.bug != "no-token-check" {
			s.TokenHolder = tx.tokenHolder(d.Token)
		}
	case *world.RunCreated:
		if d.IdempotencyKey != "" {
			s.IdempotencyRunID = tx.w.idem[d.IdempotencyKey]
		}
	}
	if tx.w.bug == "ignore-step-lease" && s.Step != nil {
		s.Step = ptr(*s.Step)
		s.Step.LeaseExpiresAt = time.Time{}
	}
	return s
}

func (tx *memTx) apply(eff world.Effect, st world.State, ev world.Event) world.EventResult {
	if eff.Skip {
		if tx.w.bug == "append-skipped" && tx.run != nil {
			tx.run.LastSeq++
			ev.Seq, ev.CreatedAt = tx.run.LastSeq, tx.w.now()
			tx.events = append(tx.events, ev)
		}
		return world.EventResult{}
	}
	tx.run = ptr(*eff.Run)
	if tx.w.bug == "hold-dropped" {
		tx.run.Hold = nil
	}
	if tx.w.bug == "version-dropped" && eff.Event.Type() != world.EventRunCreated {
		tx.run.Version = ""
	}
	if tx.w.bug == "comp-counts-dropped" {
		tx.run.Compensate, tx.run.Compensations = false, world.Compensations{}
	}
	tx.events = append(tx.events, eff.Event)
	res := world.EventResult{Event: ptr(eff.Event)}
	if eff.Step != nil {
		if st.Step == nil {
			tx.newSteps = append(tx.newSteps, eff.Step.StepID)
		}
		tx.steps[eff.Step.StepID] = ptr(*eff.Step)
		if tx.w.bug == "comp-dropped" {
			tx.steps[eff.Step.StepID].Compensation = nil
		}
		res.Step = ptr(*eff.Step)
	}
	if eff.Wait != nil {
		tx.waits[eff.Wait.WaitID] = ptr(*eff.Wait)
		if tx.w.bug == "wait-resume-dropped" {
			tx.waits[eff.Wait.WaitID].ResumeAt = time.Time{}
		}
		res.Wait = ptr(*eff.Wait)
	}
	if eff.Hook != nil {
		tx.hooks[eff.Hook.HookID] = ptr(*eff.Hook)
		tx.tokens[eff.Hook.Token] = eff.Hook.HookID
		tx.w.nextHook++
		tx.w.hookSeq[eff.Hook.HookID] = tx.w.nextHook
		res.Hook = ptr(*eff.Hook)
	} else if st.Hook != nil && eff.Event.Type() == world.EventHookReceived {
		res.Hook = ptr(*st.Hook)
	}
	if eff.DeleteHookID != "" {
		tx.deleteHook(eff.DeleteHookID)
	}
	if eff.EndsRun && tx.w.bug != "no-auto-dispose" {
		for id, h := range tx.w.hooks {
			if h.RunID == tx.runID {
				tx.deleteHook(id)
			}
		}
		for id, h := range tx.hooks {
			if h != nil && h.RunID == tx.runID {
				tx.deleteHook(id)
			}
		}
		if r := tx.w.runs[tx.runID]; r != nil {
			for id := range r.waits {
				tx.waits[id] = nil
			}
		}
		for id := range tx.waits {
			tx.waits[id] = nil
		}
	}
	if d, ok := eff.Event.Data.(*world.RunCreated); ok {
		tx.idem = d.IdempotencyKey
	}
	return res
}

func (tx *memTx) deleteHook(id string) {
	h := tx.anyHook(id)
	if h == nil {
		return
	}
	tx.hooks[id] = nil
	if holder, ok := tx.tokens[h.Token]; (ok && holder == id) || (!ok && tx.w.tokens[h.Token] == id) {
		tx.tokens[h.Token] = ""
	}
}

func (tx *memTx) commit() {
	w := tx.w
	r := w.runs[tx.runID]
	if r == nil {
		r = &memRun{steps: map[string]*world.Step{}, waits: map[string]*world.Wait{}}
		w.runs[tx.runID] = r
		w.runOrder = append(w.runOrder, tx.runID)
	}
	if tx.run != nil {
		r.run = *tx.run
	}
	r.events = append(r.events, tx.events...)
	r.stepOrder = append(r.stepOrder, tx.newSteps...)
	for id, s := range tx.steps {
		r.steps[id] = s
	}
	for id, v := range tx.waits {
		if v == nil {
			delete(r.waits, id)
		} else {
			r.waits[id] = v
		}
	}
	for id, h := range tx.hooks {
		if h == nil {
			delete(w.hooks, id)
			delete(w.hookSeq, id)
		} else {
			w.hooks[id] = h
		}
	}
	for tok, id := range tx.tokens {
		if id == "" {
			delete(w.tokens, tok)
		} else {
			w.tokens[tok] = id
		}
	}
	if tx.idem != "" {
		w.idem[tx.idem] = tx.runID
	}
}

func (w *memWorld) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	if len(p.Events) == 0 {
		return nil, fmt.Errorf("%w: empty commit", world.ErrInvalid)
	}
	tx := w.begin(p.RunID)
	if p.IfLastSeq > 0 && w.bug != "no-fence" {
		if tx.run == nil {
			return nil, fmt.Errorf("%w: run %s", world.ErrNotFound, p.RunID)
		}
		if tx.run.LastSeq != p.IfLastSeq {
			return nil, fmt.Errorf("%w: run %s is at %d, not %d", world.ErrConflict, p.RunID, tx.run.LastSeq, p.IfLastSeq)
		}
	}
	now := w.now()
	res := &world.AppendResult{Results: make([]world.EventResult, len(p.Events))}
	for i, in := range p.Events {
		ev := world.Event{RunID: p.RunID, EventID: w.ids.New(world.PrefixEvent), CorrelationID: in.CorrelationID, Data: in.Data}
		st := tx.state(ev)
		if w.bug != "no-limits" {
			st.Limits = w.Limits()
		}
		if w.bug == "late-bytes-exempt" && st.Run != nil && st.Run.Status.Terminal() {
			st.Limits.MaxRunBytes = 0 // a run's rest grows it without bound
		}
		eff, err := world.Apply(st, ev, now)
		if err != nil {
			if w.bug == "partial-commit" {
				tx.commit()
			}
			if re := (*world.RefusalError)(nil); errors.As(err, &re) {
				re.Index = i
			}
			return nil, err
		}
		res.Results[i] = tx.apply(eff, st, ev)
	}
	if w.bug == "racy-append" {
		// Drop the lock between judging and committing: lost updates.
		w.mu.Unlock()
		time.Sleep(time.Millisecond)
		w.mu.Lock()
	}
	tx.commit()
	res.Run = ptr(w.runs[p.RunID].run)
	return res, nil
}

// ---- reads ----

func (w *memWorld) GetRun(ctx context.Context, p *world.GetRunParams) (*world.Run, error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	r := w.runs[p.RunID]
	if r == nil {
		return nil, fmt.Errorf("%w: run %s", world.ErrNotFound, p.RunID)
	}
	return ptr(r.run), nil
}

func (w *memWorld) GetStep(ctx context.Context, p *world.GetStepParams) (*world.Step, error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	if r := w.runs[p.RunID]; r != nil && r.steps[p.StepID] != nil {
		return ptr(*r.steps[p.StepID]), nil
	}
	return nil, fmt.Errorf("%w: step %s", world.ErrNotFound, p.StepID)
}

func (w *memWorld) GetHook(ctx context.Context, p *world.GetHookParams) (*world.Hook, error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	if h := w.hooks[p.HookID]; h != nil {
		return ptr(*h), nil
	}
	return nil, fmt.Errorf("%w: hook %s", world.ErrNotFound, p.HookID)
}

func (w *memWorld) GetHookByToken(ctx context.Context, p *world.GetHookByTokenParams) (*world.Hook, error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	if h := w.hooks[w.tokens[p.Token]]; h != nil {
		return ptr(*h), nil
	}
	return nil, fmt.Errorf("%w: hook token", world.ErrNotFound)
}

// page cuts a listing: items are in listing order with strictly monotonic
// positions (increasing unless desc); the cursor holds the last position.
func page[T any](w *memWorld, kind string, pg world.Pagination, desc bool, items []T, pos func(T) int64) (*world.Page[T], error) {
	start := 0
	if pg.Cursor != "" {
		var after int64
		if err := world.DecodeCursor(kind, pg.Cursor, &after); err != nil {
			return nil, err
		}
		start = len(items)
		for i, it := range items {
			if (!desc && pos(it) > after) || (desc && pos(it) < after) {
				start = i
				break
			}
		}
	}
	end := min(len(items), start+pg.EffectiveLimit())
	out := &world.Page[T]{Items: slices.Clone(items[start:end]), HasMore: end < len(items)}
	if end > start && !(w.bug == "empty-last-cursor" && !out.HasMore) {
		out.Cursor = world.EncodeCursor(kind, pos(items[end-1]))
	}
	return out, nil
}

func (w *memWorld) ListRuns(ctx context.Context, p *world.ListRunsParams) (*world.Page[world.Run], error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	if p.Attribute != nil {
		if err := p.Attribute.Check(); err != nil {
			return nil, err
		}
	}
	index := map[string]int64{}
	var items []world.Run
	for i, id := range w.runOrder {
		r := w.runs[id].run
		index[id] = int64(i)
		if (p.WorkflowName == "" || r.WorkflowName == p.WorkflowName) && (p.Status == "" || r.Status == p.Status) && (w.bug == "attr-filter-ignored" || p.Attribute.Matches(&r)) {
			items = append(items, r)
		}
	}
	if w.bug != "runs-oldest-first" {
		slices.Reverse(items)
	}
	return page(w, "runs", p.Pagination, w.bug != "runs-oldest-first", items, func(r world.Run) int64 { return index[r.RunID] })
}

func (w *memWorld) ListSteps(ctx context.Context, p *world.ListStepsParams) (*world.Page[world.Step], error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	var items []world.Step
	index := map[string]int64{}
	if r := w.runs[p.RunID]; r != nil {
		for i, id := range r.stepOrder {
			items = append(items, *r.steps[id])
			index[id] = int64(i)
		}
	}
	return page(w, "steps:"+p.RunID, p.Pagination, false, items, func(s world.Step) int64 { return index[s.StepID] })
}

func (w *memWorld) eventKind(run string) string {
	if w.bug == "cursor-any-run" {
		return "events"
	}
	return "events:" + run
}

func (w *memWorld) ListEvents(ctx context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	var items []world.Event
	if r := w.runs[p.RunID]; r != nil {
		items = slices.Clone(r.events)
	}
	if p.Descending {
		slices.Reverse(items)
	}
	return page(w, w.eventKind(p.RunID), p.Pagination, p.Descending, items, func(e world.Event) int64 { return e.Seq })
}

func (w *memWorld) ListEventsByCorrelation(ctx context.Context, p *world.ListEventsByCorrelationParams) (*world.Page[world.Event], error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	var items []world.Event
	if r := w.runs[p.RunID]; r != nil {
		for _, e := range r.events {
			if e.CorrelationID == p.CorrelationID {
				items = append(items, e)
			}
		}
	}
	if p.Descending {
		slices.Reverse(items)
	}
	return page(w, "corr:"+p.RunID+":"+p.CorrelationID, p.Pagination, p.Descending, items, func(e world.Event) int64 { return e.Seq })
}

func (w *memWorld) ListHooks(ctx context.Context, p *world.ListHooksParams) (*world.Page[world.Hook], error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	var items []world.Hook
	for _, h := range w.hooks {
		if p.RunID == "" || h.RunID == p.RunID {
			items = append(items, *h)
		}
	}
	slices.SortFunc(items, func(a, b world.Hook) int { return int(w.hookSeq[a.HookID] - w.hookSeq[b.HookID]) })
	return page(w, "hooks:"+p.RunID, p.Pagination, false, items, func(h world.Hook) int64 { return w.hookSeq[h.HookID] })
}

// ---- leases ----

func (w *memWorld) AcquireRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	now := w.now()
	if l, ok := w.leases[p.RunID]; ok && l.Owner != p.Owner && l.ExpiresAt.After(now) && w.bug != "lease-steal" {
		return nil, &world.RefusalError{Kind: world.ErrLeaseHeld, Entity: p.RunID, Holder: l.Owner, Until: l.ExpiresAt, Reason: "leased by " + l.Owner}
	}
	l := world.RunLease{RunID: p.RunID, Owner: p.Owner, ExpiresAt: now.Add(p.TTL)}
	w.leases[p.RunID] = l
	return ptr(l), nil
}

func (w *memWorld) RenewRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	now := w.now()
	l, ok := w.leases[p.RunID]
	if !ok || l.Owner != p.Owner || !l.ExpiresAt.After(now) {
		return nil, fmt.Errorf("%w: run %s", world.ErrLeaseLost, p.RunID)
	}
	l.ExpiresAt = now.Add(p.TTL)
	w.leases[p.RunID] = l
	return ptr(l), nil
}

func (w *memWorld) ReleaseRunLease(ctx context.Context, p *world.RunLeaseParams) error {
	if err := w.lock(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	if l, ok := w.leases[p.RunID]; ok && (l.Owner == p.Owner || w.bug == "lease-release-any") {
		delete(w.leases, p.RunID)
	}
	return nil
}

func (w *memWorld) RenewStepLease(ctx context.Context, p *world.RenewStepLeaseParams) (*world.Step, error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	r := w.runs[p.RunID]
	if r == nil || r.steps[p.StepID] == nil {
		return nil, fmt.Errorf("%w: step %s", world.ErrNotFound, p.StepID)
	}
	s := r.steps[p.StepID]
	if p.Compensation {
		if !p.CompLeaseRenewable(s) {
			return nil, fmt.Errorf("%w: step %s is %s, not running compensation attempt %d", world.ErrConflict, p.StepID, s.Status, p.Attempt)
		}
		c := *s.Compensation
		if w.bug != "comp-renew-noop" {
			c.LeaseExpiresAt = w.now().Add(p.TTL)
		}
		s.Compensation = &c
		return ptr(*s), nil
	}
	if s.Status != world.StepStatusRunning || s.Attempt != p.Attempt {
		return nil, fmt.Errorf("%w: step %s is %s at attempt %d", world.ErrConflict, p.StepID, s.Status, s.Attempt)
	}
	if w.bug != "step-renew-noop" {
		s.LeaseExpiresAt = w.now().Add(p.TTL)
	}
	return ptr(*s), nil
}
