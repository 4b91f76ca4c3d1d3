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
// once the soonest of them is due: a wide fan-out holds back thousands at
// once, and they are due together a BackgroundDelay later. Here two
// commits' steps are held back, 100 until 1s and 50 until 2s; deferLooked
// counts the steps looked at.
func TestSessionLooksAtHeldBackStepsWhenDue(t *testing.T) {
	t.Parallel()
	now := t0
	r := newReplayer(nil, nil)
	in := &inflight{
		e:        &parts{port: &port{cfg: Config{BackgroundDelay: time.Second, Now: func() time.Time { return now }}}},
		run:      deferRun{r: r},
		queued:   map[string]bool{},
		deferred: map[string]time.Time{},
	}
	hold := func(n int) {
		ops := make([]*op, n)
		for i := range ops {
			ops[i] = &op{kind: opStep, id: "s" + strconv.Itoa(len(r.byID)), settled: true} // started inline meanwhile
			r.byID[ops[i].id] = ops[i]
		}
		if err := in.queue(context.Background(), ops); err != nil {
			t.Fatal(err)
		}
	}
	hold(100)
	now = t0.Add(time.Second)
	hold(50)
	for _, tc := range []struct {
		at            time.Duration
		looked, still int
	}{
		{500 * time.Millisecond, 0, 150},
		{999 * time.Millisecond, 0, 150},
		{time.Second, 150, 50}, // the first 100 are due: all are looked at
		{1500 * time.Millisecond, 150, 50},
		{2 * time.Second, 200, 0},
		{3 * time.Second, 200, 0},
	} {
		if err := in.flushDeferred(context.Background(), t0.Add(tc.at), false); err != nil {
			t.Fatal(err)
		}
		if in.deferLooked != tc.looked || len(in.deferred) != tc.still {
			t.Errorf("at %v: looked at %d held-back steps, %d still held back; want %d and %d", tc.at, in.deferLooked, len(in.deferred), tc.looked, tc.still)
		}
	}
}
