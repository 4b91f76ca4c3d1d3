package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// keylessWorld is a msgWorld whose GetRun fails as an encrypting World
// without the run's key does.
type keylessWorld struct{ *msgWorld }

func (keylessWorld) GetRun(context.Context, *world.GetRunParams) (*world.Run, error) {
	return nil, keyErr{}
}

// An executor without the run's key counts no delivery: at ReplaceAfter
// it does not replace the message (which would carry its receives on in
// Delivered, to fail the run at the first delivery to an executor with the
// key), and past MaxDeliveries it does not fail the run. It refuses the
// message instead: sent back with Delivered as it was.
func TestKeylessExecutorCountsNoDelivery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		delivered int
		attempt   int
	}{
		{"at ReplaceAfter", 0, 3},
		{"past MaxDeliveries", 5, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mw *msgWorld
			h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return keylessWorld{mw} },
				Config{ReplaceAfter: 3, Options: Options{MaxDeliveries: 3}})
			h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) { return mustJSON("ok"), nil })
			id := h.start("w", nil)
			ctx := context.Background()
			sent := len(mw.snapshot())
			if err := h.eng.HandleDelivery(ctx, world.Message{RunID: id, Delivered: tc.delivered}, tc.attempt); err != nil {
				t.Fatal(err)
			}
			got := mw.snapshot()[sent:]
			if len(got) != 1 || got[0].Refused != 1 || got[0].Delivered != tc.delivered {
				t.Errorf("sent %+v, want the message refused once, Delivered %d", got, tc.delivered)
			}
			if run, err := mw.GetRun(ctx, &world.GetRunParams{RunID: id}); err != nil || run.Status.Terminal() {
				t.Errorf("run %+v (%v), want it still going", run, err)
			}
		})
	}
}
