package dynamoworld_test

import (
	"context"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestHookReuseSameToken: a workflow that receives on a hook, disposes of
// it and creates the next hook on the same token gets a new hook each
// round on DynamoDB too (the token item is taken over in the commit that
// deletes it), never a hook_conflict with its own run.
func TestHookReuseSameToken(t *testing.T) {
	const rounds = 3
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	reuse := workflow.New("hook-reuse", func(ctx workflow.Context, token string) ([]string, error) {
		var got []string
		for range rounds {
			h := workflow.NewHook[string](ctx, workflow.HookOptions{Token: token})
			p, err := h.Receive(ctx)
			if err != nil {
				return got, err
			}
			got = append(got, p)
			h.Dispose(ctx)
		}
		return got, nil
	})
	reg := workflow.NewRegistry().MustRegister(reuse)
	wk, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 2}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- wk.Run(ctx) }()
	defer func() { cancel(); <-stopped }()

	token := "reuse-" + fmt.Sprint(time.Now().UnixNano())
	run, err := reuse.Start(ctx, wk.Client(), token)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range rounds {
		for {
			h, err := wk.Client().GetHookByToken(ctx, token)
			if err == nil && !seen[h.ID] {
				seen[h.ID] = true
				break
			}
			if st, _ := statusOf(ctx, run); st.Terminal() {
				_, err := run.Result(ctx)
				t.Fatalf("round %d: the run ended: %v", i, err)
			}
			if ctx.Err() != nil {
				t.Fatalf("round %d: no new hook on the token", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := wk.Client().ResumeHook(ctx, token, fmt.Sprint(i)); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	got, err := run.Result(ctx)
	if err != nil || len(got) != rounds {
		t.Fatalf("run %s: %v, %v", run.ID(), got, err)
	}
	page, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: run.ID(), Pagination: world.Pagination{Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Items {
		if e.Type() == world.EventHookConflict {
			t.Fatalf("run %s: hook_conflict at %d", run.ID(), e.Seq)
		}
	}
}
