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
	// event, by pages of at most MaxPageLimit; a page that ends with the
	// event after the last known one is the last.
	for _, c := range []struct{ fresh, calls int }{{3, 1}, {4, 1}, {5, 2}, {10, 2}, {1200, 3}} {
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

// The events a background executor of this process appended are taken
// from what it noted (recent.go) rather than read back: when the event
// after the session's last is noted, it reads the newest event alone and
// nothing more when every event between is noted, and otherwise reads as
// before (a first page of 4 events, then what is not noted). The log it
// ends up with is the World's either way.
func TestLoadNewTakesWhatWasAppendedHere(t *testing.T) {
	t.Parallel()
	lc := &loadCounter{}
	h := newHarness(t, func(lw *localworld.World) world.World { lc.World = lw; return lc }, Config{})
	ctx := context.Background()
	id := h.ids.New(world.PrefixRun)
	appendAttrs := func(n int, note bool) {
		if n == 0 {
			return
		}
		evs := make([]world.EventInput, n)
		for i := range evs {
			evs[i] = world.EventInput{Data: &world.AttributeSet{Attributes: map[string]string{"k": fmt.Sprint(i)}}}
		}
		res, err := h.w.Append(ctx, &world.AppendParams{RunID: id, Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		if note {
			h.eng.recent.note(id, res)
		}
	}
	if _, err := h.w.Append(ctx, &world.AppendParams{RunID: id, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "w"}}}}); err != nil {
		t.Fatal(err)
	}
	s := newSession(h.eng.parts, id, 0, time.Now().Add(time.Hour), &sliceWatch{})
	if _, err := s.loadNew(ctx, false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		noted, others int // appended and noted, then appended elsewhere
		read          int64
	}{
		{"all noted", 40, 0, 1},
		{"the newest not noted", 40, 3, 4},
		{"one not noted between", 40, 10, 51},
	} {
		lc.events.Store(0)
		if c.name == "one not noted between" {
			appendAttrs(1, false)
			appendAttrs(c.noted-1, true)
		} else {
			appendAttrs(c.noted, true)
		}
		appendAttrs(c.others, false)
		want := c.noted + c.others
		if n, err := s.loadNew(ctx, false); err != nil || n != want {
			t.Fatalf("%s: loaded %d, %v; want %d", c.name, n, err, want)
		}
		if got := lc.events.Load(); got != c.read {
			t.Errorf("%s: %d events read, want %d", c.name, got, c.read)
		}
	}
	page, err := h.lw.ListEvents(ctx, &world.ListEventsParams{RunID: id, Pagination: world.Pagination{Limit: world.MaxPageLimit}})
	if err != nil {
		t.Fatal(err)
	}
	var got []world.Event
	s.log.each(func(ev *world.Event) { got = append(got, *ev) })
	if len(got) != len(page.Items) {
		t.Fatalf("log of %d events, want the World's %d", len(got), len(page.Items))
	}
	for i, ev := range page.Items {
		if got[i].Seq != ev.Seq || got[i].EventID != ev.EventID || got[i].Type() != ev.Type() {
			t.Errorf("event %d: %+v, want %+v", i, got[i], ev)
		}
	}
	if rr := h.eng.recent.runs[id]; rr != nil {
		t.Errorf("%d events still kept after the session loaded them", len(rr.events))
	}
}
