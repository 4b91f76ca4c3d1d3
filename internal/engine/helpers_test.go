package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// mapRegistry is a test Registry.
type mapRegistry struct {
	mu    sync.Mutex
	wfs   map[string]*Workflow
	steps map[string]*Step
	// stepLookups counts the calls of Step.
	stepLookups atomic.Int64
}

func newRegistry() *mapRegistry {
	return &mapRegistry{wfs: map[string]*Workflow{}, steps: map[string]*Step{}}
}

func (r *mapRegistry) Workflow(name string) (*Workflow, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.wfs[name]
	return w, ok
}

func (r *mapRegistry) Step(name string) (*Step, bool) {
	r.stepLookups.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.steps[name]
	return s, ok
}

func (r *mapRegistry) wf(name string, fn func(*Context, json.RawMessage) (json.RawMessage, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wfs[name] = &Workflow{Name: name, Fn: fn}
}

func (r *mapRegistry) step(name string, maxRetries int, fn func(context.Context, json.RawMessage) (json.RawMessage, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps[name] = &Step{Name: name, Fn: fn, MaxRetries: maxRetries, Backoff: func(int) time.Duration { return 10 * time.Millisecond }}
}

// countingWorld counts Append calls.
type countingWorld struct {
	*localworld.World
	appends atomic.Int64
}

func (c *countingWorld) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	c.appends.Add(1)
	return c.World.Append(ctx, p)
}

type harness struct {
	t   *testing.T
	lw  *localworld.World
	w   world.World
	reg *mapRegistry
	eng *Engine
	ids *world.IDSource
}

func newHarness(t *testing.T, w func(*localworld.World) world.World, cfg Config) *harness {
	t.Helper()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	h := &harness{t: t, lw: lw, w: lw, reg: newRegistry(), ids: world.NewIDSource(nil, nil)}
	if w != nil {
		h.w = w(lw)
	}
	cfg.World, cfg.Registry = h.w, h.reg
	h.eng, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.eng.Close)
	return h
}

// work runs n consumers until the test ends.
func (h *harness) work(n int, eng *Engine) {
	h.t.Helper()
	if eng == nil {
		eng = h.eng
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				ds, err := h.lw.Receive(ctx, &world.ReceiveParams{Max: 1, Wait: 50 * time.Millisecond, Visibility: time.Minute})
				if err != nil {
					continue
				}
				for _, d := range ds {
					msg, err := world.DecodeMessage(d.Body)
					if err == nil {
						err = eng.HandleDelivery(ctx, msg, d.Attempt)
					}
					if err == nil || IsPermanent(err) {
						_ = h.lw.Ack(context.Background(), &world.AckParams{Receipt: d.Receipt})
					} else {
						_ = h.lw.Release(context.Background(), &world.ReleaseParams{Receipt: d.Receipt, Delay: 10 * time.Millisecond})
					}
				}
			}
		}()
	}
	h.t.Cleanup(func() { cancel(); wg.Wait() })
}

func (h *harness) start(name string, input any) string {
	h.t.Helper()
	b, _ := json.Marshal(input)
	id := h.ids.New(world.PrefixRun)
	_, err := h.w.Append(context.Background(), &world.AppendParams{RunID: id, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: name, Input: b}}}})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := Wake(context.Background(), h.w, time.Now, id, "start:"+id); err != nil {
		h.t.Fatal(err)
	}
	return id
}

// wait waits for run id to end, for up to a minute: it returns as soon as
// the run ends, and a loaded machine may take many times longer than an
// idle one.
func (h *harness) wait(id string) *world.Run {
	h.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		r, err := h.lw.GetRun(context.Background(), &world.GetRunParams{RunID: id})
		if err != nil {
			h.t.Fatal(err)
		}
		if r.Status.Terminal() {
			return r
		}
		time.Sleep(2 * time.Millisecond)
	}
	h.t.Fatalf("run %s did not finish", id)
	return nil
}

func (h *harness) events(id string) []world.Event {
	h.t.Helper()
	var out []world.Event
	cursor := ""
	for {
		p, err := h.lw.ListEvents(context.Background(), &world.ListEventsParams{RunID: id, Pagination: world.Pagination{Cursor: cursor, Limit: 1000}})
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, p.Items...)
		if !p.HasMore || len(p.Items) == 0 {
			return out
		}
		cursor = p.Cursor
	}
}

func count(evs []world.Event, t world.EventType) int {
	n := 0
	for _, e := range evs {
		if e.Type() == t {
			n++
		}
	}
	return n
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

var errBoom = errors.New("boom")
