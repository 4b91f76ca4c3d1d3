package engine

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func pendingStep(id string, index, retryMS int) *op {
	o := &op{kind: opStep, id: id, index: index, status: world.StepStatusPending}
	if retryMS != 0 {
		o.retryAfter = at(retryMS)
	}
	return o
}

func runningStep(id string, index, leaseMS int, queued bool) *op {
	return &op{kind: opStep, id: id, index: index, status: world.StepStatusRunning, leaseUntil: at(leaseMS), queued: queued}
}

func waitOp(id string, index, resumeMS int) *op {
	return &op{kind: opWait, id: id, index: index, resumeAt: at(resumeMS)}
}

func opsByID(ops ...*op) map[string]*op {
	m := make(map[string]*op, len(ops))
	for _, o := range ops {
		m[o.id] = o
	}
	return m
}

// inOrder returns the steps in creation order, after a settled step whose
// retry would be the soonest timer, each noted as a replay notes the steps
// whose retry time or lease it sets (stepOrder.timer).
func inOrder(steps map[string]*op) *stepOrder {
	gone := pendingStep("settled", -1, 1)
	gone.settled = true
	so := &stepOrder{}
	so.add(gone)
	so.timer(gone)
	for _, o := range slices.SortedFunc(maps.Values(steps), func(a, b *op) int { return a.index - b.index }) {
		so.add(o)
		if !o.retryAfter.IsZero() || !o.leaseUntil.IsZero() {
			so.timer(o)
		}
	}
	return so
}

// A session's scheduler finds the steps' timers (next) among the steps
// that may have one (stepOrder.timed), dropping those it finds settled or
// queued: in a wide fan-out, thousands of steps queued to background
// executors stay open, and each turn of the session asks. walked counts
// the steps looked at: all those noted the first time (here 99 queued, one
// retrying and a settled one), then the one left.
func TestScheduleNextWalksStepsInOrder(t *testing.T) {
	t.Parallel()
	steps := map[string]*op{}
	for i := range 100 {
		o := runningStep("s"+strconv.Itoa(i), i, 1000, true)
		if i == 50 {
			o = pendingStep(o.id, i, 300)
		}
		steps[o.id] = o
	}
	sc := schedule{now: t0, steps: steps, order: inOrder(steps)}
	for walk, want := range []int{101, 102} {
		if got := sc.next(); !got.Equal(at(300)) {
			t.Fatalf("next = %v, want %v", got, at(300))
		}
		if sc.order.walked != want {
			t.Errorf("walk %d: looked at %d steps, want %d", walk+1, sc.order.walked, want)
		}
	}
}

func ids(ops []*op) []string {
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = o.id
	}
	return out
}

func TestScheduleNext(t *testing.T) {
	t.Parallel()
	slack := int(leaseCheckSlack / time.Millisecond)
	tests := []struct {
		name      string
		sc        schedule
		want      time.Time
		leaseOnly bool
	}{
		{name: "nothing timed", sc: schedule{}, want: time.Time{}},
		{name: "soonest wait", sc: schedule{waits: opsByID(waitOp("w1", 0, 300), waitOp("w2", 1, 200))}, want: at(200)},
		{name: "deferred step", sc: schedule{waits: opsByID(waitOp("w1", 0, 300)), deferred: map[string]time.Time{"s1": at(100)}}, want: at(100)},
		{name: "held-back steps counted by time", sc: schedule{waits: opsByID(waitOp("w1", 0, 300)), holds: map[time.Time]int{at(100): 3, at(50): 2}}, want: at(50)},
		{name: "retry of an inline attempt", sc: schedule{steps: opsByID(pendingStep("s1", 0, 150))}, want: at(150)},
		{name: "retry already due is no timer", sc: schedule{steps: opsByID(pendingStep("s1", 0, -5))}, want: time.Time{}},
		{name: "retry of a queued attempt is no timer", sc: schedule{steps: opsByID(func() *op { o := pendingStep("s1", 0, 150); o.queued = true; return o }())}, want: time.Time{}},
		{name: "lease of an inline attempt, with slack", sc: schedule{steps: opsByID(runningStep("s1", 0, 1000, false))}, want: at(1000 + slack), leaseOnly: true},
		{name: "lease of a queued attempt is no timer", sc: schedule{steps: opsByID(runningStep("s1", 0, 1000, true))}, want: time.Time{}},
		{name: "expired lease is no timer", sc: schedule{steps: opsByID(runningStep("s1", 0, 0, false))}, want: time.Time{}},
		{name: "step in flight here is no timer", sc: schedule{steps: opsByID(runningStep("s1", 0, 1000, false)), inflight: map[string]context.CancelFunc{"s1": func() {}}}, want: time.Time{}},
		{name: "lease before a wait", sc: schedule{steps: opsByID(runningStep("s1", 0, 100, false)), waits: opsByID(waitOp("w1", 1, 900))}, want: at(100 + slack), leaseOnly: true},
		{name: "wait at the lease check is no lease check", sc: schedule{steps: opsByID(runningStep("s1", 0, 100, false)), waits: opsByID(waitOp("w1", 1, 100+slack))}, want: at(100 + slack)},
		{name: "retry at the lease check is no lease check", sc: schedule{steps: opsByID(runningStep("s1", 0, 100, false), pendingStep("s2", 1, 100+slack))}, want: at(100 + slack)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.sc.now = t0
			got := tt.sc.next()
			if !got.Equal(tt.want) {
				t.Fatalf("next = %v, want %v", got, tt.want)
			}
			if ordered := tt.sc; len(ordered.steps) > 0 {
				// The same, walking the steps in creation order among a
				// settled one (with a timer it no longer has).
				ordered.order = inOrder(ordered.steps)
				if got := ordered.next(); !got.Equal(tt.want) {
					t.Fatalf("next in creation order = %v, want %v", got, tt.want)
				}
			}
			if !got.IsZero() {
				if lease := tt.sc.isLeaseCheck(got); lease != tt.leaseOnly {
					t.Fatalf("isLeaseCheck = %v, want %v", lease, tt.leaseOnly)
				}
			}
		})
	}
}

func TestScheduleRunnableAndDueWaits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		sc       schedule
		runnable []string
		dueWaits []string
	}{
		{name: "empty", sc: schedule{}},
		{
			name: "due and expired steps in creation order",
			sc: schedule{steps: opsByID(pendingStep("c", 2, 0), pendingStep("a", 0, -1), runningStep("b", 1, -1, true),
				pendingStep("later", 3, 50), runningStep("leased", 4, 50, false))},
			runnable: []string{"a", "b", "c"},
		},
		{
			name: "in flight or queued here is not runnable",
			sc: schedule{steps: opsByID(pendingStep("a", 0, 0), pendingStep("b", 1, 0), pendingStep("c", 2, 0)),
				inflight: map[string]context.CancelFunc{"a": func() {}}, queued: map[string]bool{"b": true}},
			runnable: []string{"c"},
		},
		{
			name:     "due waits by time, then creation",
			sc:       schedule{waits: opsByID(waitOp("w3", 3, 0), waitOp("w1", 1, -10), waitOp("w2", 2, 0), waitOp("w0", 0, 0), waitOp("future", 4, 1))},
			dueWaits: []string{"w1", "w0", "w2", "w3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.sc.now = t0
			if got := ids(tt.sc.runnable()); !equalStrings(got, tt.runnable) {
				t.Errorf("runnable = %v, want %v", got, tt.runnable)
			}
			if got := ids(tt.sc.dueWaits()); !equalStrings(got, tt.dueWaits) {
				t.Errorf("dueWaits = %v, want %v", got, tt.dueWaits)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestWakeDecisions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  time.Time
		want time.Time
	}{
		{"wake at the poll", wakeAt(at(1000), time.Time{}, at(5000), false), at(1000)},
		{"wake at a sooner timer", wakeAt(at(1000), at(300), at(5000), false), at(300)},
		{"wake at a sooner deadline", wakeAt(at(1000), at(300), at(200), false), at(200)},
		{"a draining session ignores its deadline", wakeAt(at(1000), at(300), at(200), true), at(300)},
		{"lease check rounds up", leaseCheckAt(at(1050)), at(2000).Truncate(time.Second)},
		{"lease check on a whole second stays", leaseCheckAt(t0.Truncate(time.Second)), t0.Truncate(time.Second)},
	}
	for _, tt := range tests {
		if !tt.got.Equal(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestLingersAndTimerSend(t *testing.T) {
	t.Parallel()
	linger := 250 * time.Millisecond
	lingerTests := []struct {
		name     string
		next     time.Time
		deadline time.Time
		linger   time.Duration
		draining bool
		want     bool
	}{
		{"close timer", at(100), at(5000), linger, false, true},
		{"timer at the linger", at(250), at(5000), linger, false, true},
		{"far timer", at(251), at(5000), linger, false, false},
		{"no timer", time.Time{}, at(5000), linger, false, false},
		{"timer past the deadline", at(100), at(100), linger, false, false},
		{"draining", at(100), at(5000), linger, true, false},
		{"lingering disabled", at(100), at(5000), 0, false, false},
	}
	for _, tt := range lingerTests {
		if got := lingers(t0, tt.next, tt.deadline, tt.linger, tt.draining); got != tt.want {
			t.Errorf("lingers, %s: %v, want %v", tt.name, got, tt.want)
		}
	}
	sendTests := []struct {
		name  string
		next  time.Time
		lead  time.Duration
		want  time.Time
		early bool
	}{
		{"far timer is sent early", at(1000), wakeLead(linger), at(1000).Add(-maxWakeLead), true},
		{"close timer is sent on time", at(10), wakeLead(linger), at(10), false},
		{"no lead without lingering", at(1000), wakeLead(0), at(1000), false},
		{"lead is the linger when shorter", at(1000), wakeLead(5 * time.Millisecond), at(995), true},
	}
	for _, tt := range sendTests {
		got, early := timerSend(t0, tt.next, tt.lead)
		if !got.Equal(tt.want) || early != tt.early {
			t.Errorf("timerSend, %s: %v early=%v, want %v early=%v", tt.name, got, early, tt.want, tt.early)
		}
	}
}

func TestBounceDelay(t *testing.T) {
	t.Parallel()
	base := 100 * time.Millisecond
	tests := []struct {
		name    string
		hop     int
		expires time.Time
		want    time.Duration
	}{
		{"first bounce", 0, time.Time{}, base},
		{"doubles per hop", 3, time.Time{}, 8 * base},
		{"at most 64 times", 12, time.Time{}, 64 * base},
		{"not past the holder's expiry", 5, at(250), 250*time.Millisecond + expirySlack},
		{"never below the base", 5, at(10), base},
		{"an expired lease changes nothing", 2, at(-1000), 4 * base},
	}
	for _, tt := range tests {
		got, bucket := bounceDelay(t0, base, tt.hop, tt.expires)
		if got != tt.want {
			t.Errorf("%s: delay %v, want %v", tt.name, got, tt.want)
		}
		if want := t0.UnixMilli() / got.Milliseconds(); bucket != want {
			t.Errorf("%s: bucket %d, want %d", tt.name, bucket, want)
		}
	}
}

func TestIdleEnding(t *testing.T) {
	t.Parallel()
	slack := int(leaseCheckSlack / time.Millisecond)
	lease := opsByID(runningStep("s1", 0, 100, false))
	tests := []struct {
		name     string
		sc       schedule
		next     time.Time
		draining bool
		want     idleEnd
	}{
		{name: "nothing timed", sc: schedule{}, want: endQuiet},
		{name: "a wait", sc: schedule{waits: opsByID(waitOp("w1", 0, 500))}, next: at(500), want: endTimer},
		{name: "a lease only", sc: schedule{steps: lease}, next: at(100 + slack), want: endLeaseCheck},
		{name: "a held-back step", sc: schedule{}, next: at(40), want: endTimer},
		{name: "draining with a step ready", sc: schedule{steps: opsByID(pendingStep("s1", 0, 0))}, draining: true, next: at(500), want: endBudget},
		{name: "draining with nothing ready", sc: schedule{waits: opsByID(waitOp("w1", 0, 500))}, draining: true, next: at(500), want: endTimer},
		{name: "a ready step while not draining is no budget end", sc: schedule{steps: opsByID(pendingStep("s1", 0, 0))}, want: endQuiet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.sc.now = t0
			if got := tt.sc.idleEnding(tt.next, tt.draining); got != tt.want {
				t.Fatalf("idleEnding = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestFirstRunnable: the first n runnable steps are runnable's first n,
// whatever order the map yields them in, for n below, at and above the
// number runnable.
func TestFirstRunnable(t *testing.T) {
	t.Parallel()
	steps := map[string]*op{}
	queued := map[string]bool{}
	for i := range 200 {
		id := "s" + strconv.Itoa(i)
		switch i % 4 {
		case 0:
			steps[id] = pendingStep(id, i, 0)
		case 1:
			steps[id] = pendingStep(id, i, 50) // not due
		case 2:
			steps[id] = runningStep(id, i, -1, false) // lease expired
		default:
			steps[id] = pendingStep(id, i, 0)
			queued[id] = i%8 == 3
		}
	}
	sc := schedule{now: at(0), steps: steps, queued: queued}
	all := ids(sc.runnable())
	var order stepOrder // the same steps in creation order, with settled ones
	for i := range 200 {
		if o := steps["s"+strconv.Itoa(i)]; o != nil {
			order.add(o)
		}
		if i%10 == 0 {
			order.add(&op{kind: opStep, id: "settled" + strconv.Itoa(i), index: i, settled: true})
		}
	}
	for _, n := range []int{0, 1, 2, 16, 75, len(all), len(all) + 5} {
		for range 5 { // map order varies
			want := all[:min(n, len(all))]
			if got := ids(sc.firstRunnable(n)); !equalStrings(got, want) {
				t.Fatalf("firstRunnable(%d) = %v, want %v", n, got, want)
			}
		}
		ordered := sc
		ordered.order = &order
		if got := ids(ordered.firstRunnable(n)); !equalStrings(got, all[:min(n, len(all))]) {
			t.Fatalf("firstRunnable(%d) in creation order = %v, want %v", n, got, all[:min(n, len(all))])
		}
	}
}

// A session of a wide fan-out asks for the first steps it may start at
// every commit: it looks at the steps in creation order up to them, not at
// all the open ones (here 5,000, of which the first 100 settled and the
// next 16 running here).
func TestFirstRunnableLooksAtTheFirst(t *testing.T) {
	t.Parallel()
	r := newReplayer(nil, nil)
	inflight := map[string]context.CancelFunc{}
	for i := range 5100 {
		id := "s" + strconv.Itoa(i)
		o := pendingStep(id, i, 0)
		r.openSteps[id] = o
		r.stepOrder.add(o)
		switch {
		case i < 100:
			r.settleStep(o, nil, nil)
		case i < 116:
			inflight[id] = func() {}
		}
	}
	sc := schedule{now: at(0), steps: r.openSteps, inflight: inflight, order: &r.stepOrder}
	for range 3 {
		r.stepOrder.looked = 0
		got := sc.firstRunnable(16)
		if len(got) != 16 || got[0].index != 116 || got[15].index != 131 {
			t.Fatalf("firstRunnable(16) = %v, want steps 116 to 131", ids(got))
		}
		if r.stepOrder.looked > 132 {
			t.Errorf("looked at %d steps for the first 16 of 5,000 open, want at most 132", r.stepOrder.looked)
		}
	}
}
