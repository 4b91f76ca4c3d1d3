package engine

// End-to-end checks that the engine uses what makes a wide fan-out cheap
// in one process: each test goes through Engine.Handle and counts what the
// World is asked, so that unwiring the mechanism (not only breaking it)
// fails it.

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// fanWorld counts the events ListEvents returns, the reads from a log's
// start, and the GetStep calls, and keeps the size of each newest-first
// read's first page.
type fanWorld struct {
	*localworld.World
	events, fromStart, gets atomic.Int64
	mu                      sync.Mutex
	firstPages              []int
}

func (f *fanWorld) ListEvents(ctx context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	if p.Cursor == "" && !p.Descending {
		f.fromStart.Add(1)
	}
	page, err := f.World.ListEvents(ctx, p)
	if page != nil {
		f.events.Add(int64(len(page.Items)))
		if p.Cursor == "" && p.Descending {
			f.mu.Lock()
			f.firstPages = append(f.firstPages, len(page.Items))
			f.mu.Unlock()
		}
	}
	return page, err
}

func (f *fanWorld) GetStep(ctx context.Context, p *world.GetStepParams) (*world.Step, error) {
	f.gets.Add(1)
	return f.World.GetStep(ctx, p)
}

// fanCounts is what fanOutInGroups counted.
type fanCounts struct {
	groupGets  int64 // GetStep calls while the groups ran their steps
	againGets  int64 // GetStep calls as the groups' messages came again
	loadedBack int64 // events read by the session once its steps finished
	firstBack  int   // of those, the first page's
	looked     int   // steps the session's scheduler looked at
	groups     int   // group messages handled
}

// fanOutInGroups runs a workflow starting n steps at once (InlineConcurrency
// 4) and then waiting on a hook, in one engine: its session runs the first
// four steps inline, held until the test lets them finish, and queues the
// others in groups, which the test handles meanwhile, one message at a
// time, then each message again (at-least-once: a redelivery). Then it
// lets the inline steps finish and the session, which has held the run's
// lease all along, takes in the groups' outcomes and parks at the hook.
func fanOutInGroups(t *testing.T, n int) fanCounts {
	t.Helper()
	var fw *fanWorld
	h := newHarness(t, func(lw *localworld.World) world.World { fw = &fanWorld{World: lw}; return fw }, Config{Linger: -1, Options: Options{InlineConcurrency: 4}})
	gate := make(chan struct{})
	var inline sync.WaitGroup
	inline.Add(4)
	var grouped atomic.Int64
	h.reg.step("add", 2, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		var v [2]int
		_ = json.Unmarshal(in, &v)
		if v[0] < 4 {
			inline.Done()
			<-gate
		} else {
			grouped.Add(1)
		}
		return addStep(ctx, in)
	})
	h.reg.wf("fan", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		fs := make([]*Future, n)
		for i := range n {
			fs[i] = c.Step("add", mustJSON([2]int{i, 1}))
		}
		awaitAll(c, fs...)
		hk := c.Hook("fan-token", nil, false)
		c.Await(func() bool { return hk.Len() > 0 })
		return mustJSON(n), nil
	})
	ctx := context.Background()
	id := h.ids.New(world.PrefixRun)
	if _, err := h.w.Append(ctx, &world.AppendParams{RunID: id, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "fan"}}}}); err != nil {
		t.Fatal(err)
	}
	session := make(chan error, 1)
	go func() { session <- h.eng.Handle(ctx, world.Message{RunID: id}) }()
	inline.Wait() // the session has created the steps and queued the rest

	var c fanCounts
	var msgs []world.Message
	for deadline := time.Now().Add(time.Minute); grouped.Load() < int64(n-4); { // a bound against a hang
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d queued steps ran", grouped.Load(), n-4)
		}
		ds, err := h.lw.Receive(ctx, &world.ReceiveParams{Max: 1, Wait: 20 * time.Millisecond, Visibility: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			msg, err := world.DecodeMessage(d.Body)
			if err != nil {
				t.Fatal(err)
			}
			if msg.StepID != "" {
				msgs = append(msgs, msg)
			}
			if err := h.eng.HandleDelivery(ctx, msg, d.Attempt); err != nil {
				t.Fatalf("handle %+v: %v", msg, err)
			}
			_ = h.lw.Ack(ctx, &world.AckParams{Receipt: d.Receipt})
		}
	}
	c.groups = len(msgs)
	c.groupGets = fw.gets.Load()
	for _, msg := range msgs {
		if err := h.eng.HandleDelivery(ctx, msg, 2); err != nil {
			t.Fatalf("handle %+v again: %v", msg, err)
		}
	}
	c.againGets = fw.gets.Load() - c.groupGets

	before := fw.events.Load()
	fw.mu.Lock()
	pages := len(fw.firstPages)
	fw.mu.Unlock()
	close(gate)
	if err := <-session; err != nil {
		t.Fatal(err)
	}
	c.loadedBack = fw.events.Load() - before
	fw.mu.Lock()
	c.firstBack = -1
	if len(fw.firstPages) > pages {
		c.firstBack = fw.firstPages[pages]
	}
	fw.mu.Unlock()
	if got := grouped.Load(); got != int64(n-4) {
		t.Fatalf("%d queued steps ran, want %d (each once)", got, n-4)
	}
	evs := h.events(id)
	if got := count(evs, world.EventStepCompleted); got != n {
		t.Fatalf("step_completed = %d, want %d", got, n)
	}
	h.eng.logs.mu.Lock()
	if el, ok := h.eng.logs.byRun[id]; ok {
		if live := el.Value.(*cachedLog).live; live != nil {
			c.looked = live.r.stepOrder.looked
		} else {
			c.looked = -1
		}
	} else {
		c.looked = -2
	}
	h.eng.logs.mu.Unlock()
	t.Logf("%+v", c)
	return c
}

// releaseWorld is fanWorld that calls onRelease after the first run lease
// it releases.
type releaseWorld struct {
	*fanWorld
	once      sync.Once
	onRelease func()
}

func (r *releaseWorld) ReleaseRunLease(ctx context.Context, p *world.RunLeaseParams) error {
	err := r.fanWorld.ReleaseRunLease(ctx, p)
	r.once.Do(r.onRelease)
	return err
}

// A continuation of a run that takes the run's lease just after its
// session in this process released it, before that session has put the
// run's log back in the cache, waits for it rather than read the whole log
// again (runlease.go marks the session's loan released: logCache.take).
// Here the continuation is handled as soon as the first session's release
// returns, and the test lets that session go on only once the
// continuation waits for it or has read the log from its start.
func TestContinuationWaitsForTheReleasedSessionsLog(t *testing.T) {
	t.Parallel()
	var rw *releaseWorld
	h := newHarness(t, func(lw *localworld.World) world.World {
		rw = &releaseWorld{fanWorld: &fanWorld{World: lw}}
		return rw
	}, Config{Linger: -1})
	h.reg.wf("wait", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		hk := c.Hook("wait-token", nil, false)
		c.Await(func() bool { return hk.Len() > 0 })
		return mustJSON(1), nil
	})
	ctx := context.Background()
	id := h.ids.New(world.PrefixRun)
	if _, err := h.w.Append(ctx, &world.AppendParams{RunID: id, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "wait"}}}}); err != nil {
		t.Fatal(err)
	}
	next := make(chan error, 1)
	rw.onRelease = func() {
		go func() { next <- h.eng.Handle(ctx, world.Message{RunID: id}) }()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) { // a bound against a hang
			h.eng.logs.mu.Lock()
			waiting := 0
			if l := h.eng.logs.out[id]; l != nil {
				waiting = l.waiting
			}
			h.eng.logs.mu.Unlock()
			if waiting > 0 || rw.fromStart.Load() > 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Error("the continuation neither waited nor loaded")
				return
			}
		}
	}
	if err := h.eng.Handle(ctx, world.Message{RunID: id}); err != nil {
		t.Fatal(err)
	}
	if err := <-next; err != nil {
		t.Fatal(err)
	}
	if n := rw.fromStart.Load(); n != 1 {
		t.Errorf("the log was read from its start %d times, want once (the first session)", n)
	}
}

// The groups of a fan-out its session created in this process sort their
// steps by what the session's commit left (commit.go notes it in
// Engine.known) and, redelivered, by what their own Appends left
// (appendNoted): no GetStep either time. Before, each group read each of
// its steps.
func TestFanOutGroupsReadNoSteps(t *testing.T) {
	t.Parallel()
	c := fanOutInGroups(t, 64)
	if c.groups < 2 {
		t.Fatalf("%d group messages, want the 60 queued steps in several", c.groups)
	}
	if c.groupGets != 0 {
		t.Errorf("the groups made %d GetStep calls, want none (the session's commits noted their steps)", c.groupGets)
	}
	if c.againGets != 0 {
		t.Errorf("the groups redelivered made %d GetStep calls, want none (their Appends noted their steps' ends)", c.againGets)
	}
}

// The session of a fan-out whose steps groups in this process ran takes
// their starts and outcomes (120 events) from what the groups noted
// (appendNoted, recent.go) rather than read them back: a few pages of 4.
func TestFanOutSessionTakesWhatGroupsAppended(t *testing.T) {
	t.Parallel()
	const n = 64
	c := fanOutInGroups(t, n)
	if c.loadedBack > 24 {
		t.Errorf("the session read %d events back after the groups' %d, want at most 24", c.loadedBack, 2*(n-4))
	}
	if c.firstBack != 1 {
		t.Errorf("the session's first read back was a page of %d events, want 1 (the newest: the rest is here)", c.firstBack)
	}
}

// The scheduler of a fan-out's session walks its open steps in creation
// order (schedule.order, steporder.go), each walk stopping once it has the
// steps it wants and dropping the settled steps it passes. looked counts
// the steps the walks looked at: none when the scheduler is not given the
// order (it looks at the map of open steps then), and a few walks of the
// steps here (each passes the queued ones).
func TestFanOutSchedulerWalksStepsInOrder(t *testing.T) {
	t.Parallel()
	const n = 256
	c := fanOutInGroups(t, n)
	if c.looked <= 0 || c.looked > 8*n {
		t.Errorf("the scheduler looked at %d steps in creation order, want some, at most %d", c.looked, 8*n)
	}
}
