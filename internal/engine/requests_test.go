package engine

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// getRunCounter counts GetRun calls.
type getRunCounter struct {
	*localworld.World
	gets atomic.Int64
}

func (g *getRunCounter) GetRun(ctx context.Context, p *world.GetRunParams) (*world.Run, error) {
	g.gets.Add(1)
	return g.World.GetRun(ctx, p)
}

// A run that is no child run ends without reading its run back: the
// session knows from run_created that there is no parent to notify.
func TestRunEndReadsNoRunWithoutParent(t *testing.T) {
	t.Parallel()
	var gc *getRunCounter
	h := newHarness(t, func(lw *localworld.World) world.World { gc = &getRunCounter{World: lw}; return gc }, Config{})
	h.reg.step("add", 0, addStep)
	h.reg.wf("one", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		f := c.Step("add", mustJSON([2]int{1, 2}))
		c.Await(f.Done)
		r, _ := f.Result()
		return r, nil
	})
	id := h.start("one", nil)
	if err := h.eng.Handle(context.Background(), world.Message{RunID: id}); err != nil {
		t.Fatal(err)
	}
	if run := h.wait(id); run.Status != world.RunStatusCompleted {
		t.Fatalf("run %s", run.Status)
	}
	if n := gc.gets.Load(); n != 0 {
		t.Errorf("GetRun called %d times, want 0", n)
	}
}
