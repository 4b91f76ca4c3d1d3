package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// TestLoadNewReadsWhatIsNew: loading what was appended since the session's
// last event reads those events and a few more, not a page of a thousand
// (which every refused commit of a busy fan-out decoded).
func TestLoadNewReadsWhatIsNew(t *testing.T) {
	t.Parallel()
	lc := &loadCounter{}
	h := newHarness(t, func(lw *localworld.World) world.World { lc.World = lw; return lc }, Config{})
	ctx := context.Background()
	id := h.ids.New(world.PrefixRun)
	if _, err := h.w.Append(ctx, &world.AppendParams{RunID: id, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "w"}}}}); err != nil {
		t.Fatal(err)
	}
	attrs := func(n int) {
		evs := make([]world.EventInput, n)
		for i := range evs {
			evs[i] = world.EventInput{Data: &world.AttributeSet{Attributes: map[string]string{"k": fmt.Sprint(i)}}}
		}
		if _, err := h.w.Append(ctx, &world.AppendParams{RunID: id, Events: evs}); err != nil {
			t.Fatal(err)
		}
	}
	attrs(1500)
	s := newSession(h.eng.parts, id, 0, time.Now().Add(time.Hour), &sliceWatch{})
	if n, err := s.loadNew(ctx, false); err != nil || n != 1501 {
		t.Fatalf("cold load: %d events, %v", n, err)
	}
	// calls: a first page of 4, then what is left and the last known
	// event, by pages of at most MaxPageLimit.
	for _, c := range []struct{ fresh, calls int }{{3, 1}, {4, 2}, {5, 2}, {10, 2}, {1200, 3}} {
		attrs(c.fresh)
		lc.events.Store(0)
		lc.calls.Store(0)
		if n, err := s.loadNew(ctx, false); err != nil || n != c.fresh {
			t.Fatalf("load: %d events, %v; want %d", n, err, c.fresh)
		}
		if got := lc.events.Load(); got > int64(c.fresh)+5 {
			t.Errorf("%d new events: %d read, want at most %d", c.fresh, got, c.fresh+5)
		}
		if got := lc.calls.Load(); got != int64(c.calls) {
			t.Errorf("%d new events: %d ListEvents calls, want %d", c.fresh, got, c.calls)
		}
	}
}
