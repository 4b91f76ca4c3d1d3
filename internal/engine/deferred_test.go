package engine

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// deferRun is the session as flushDeferred sees it: its replayer.
type deferRun struct {
	inflightRun
	r *replayer
}

func (d deferRun) replay() *replayer { return d.r }

// A session looks at its held-back steps (flushDeferred, each turn) only
// once one of their times has come: a wide fan-out holds back thousands at
// once, and they are due together a BackgroundDelay later. Here three
// commits' steps are held back, 100 until 1s, 50 until 2s and 30 until 3s,
// and the 50 start inline after the first look; deferLooked counts the
// steps looked at, and the session's next timer is the soonest hold left.
func TestSessionLooksAtHeldBackStepsWhenDue(t *testing.T) {
	t.Parallel()
	now := t0
	r := newReplayer(nil, nil)
	in := &inflight{
		e:          &parts{port: &port{cfg: Config{BackgroundDelay: time.Second, Now: func() time.Time { return now }}}},
		run:        deferRun{r: r},
		queued:     map[string]bool{},
		deferred:   map[string]time.Time{},
		deferTimes: map[time.Time]int{},
	}
	hold := func(n int) []*op {
		ops := make([]*op, n)
		for i := range ops {
			ops[i] = &op{kind: opStep, id: "s" + strconv.Itoa(len(r.byID)), settled: true} // started inline meanwhile
			r.byID[ops[i].id] = ops[i]
		}
		if err := in.queue(context.Background(), ops); err != nil {
			t.Fatal(err)
		}
		return ops
	}
	hold(100)
	now = t0.Add(time.Second)
	second := hold(50)
	now = t0.Add(2 * time.Second)
	hold(30)
	for _, tc := range []struct {
		at            time.Duration
		looked, still int
		next          time.Duration
	}{
		{500 * time.Millisecond, 0, 180, time.Second},
		{time.Second, 180, 80, 2 * time.Second}, // the first 100 are due: all are looked at
		{1500 * time.Millisecond, 180, 30, 3 * time.Second},
		{2 * time.Second, 180, 30, 3 * time.Second}, // the 50 due now have started inline
		{3 * time.Second, 210, 0, 0},
	} {
		if err := in.flushDeferred(context.Background(), t0.Add(tc.at), false); err != nil {
			t.Fatal(err)
		}
		if tc.at == 1500*time.Millisecond {
			for _, o := range second {
				in.unhold(o.id) // as launch does
			}
		}
		var want time.Time
		if tc.next > 0 {
			want = t0.Add(tc.next)
		}
		next := in.schedule(t0.Add(tc.at)).next()
		if in.deferLooked != tc.looked || len(in.deferred) != tc.still || !next.Equal(want) {
			t.Errorf("at %v: looked at %d held-back steps, %d still held back, next timer %v; want %d, %d and %v",
				tc.at, in.deferLooked, len(in.deferred), next, tc.looked, tc.still, want)
		}
	}
}
