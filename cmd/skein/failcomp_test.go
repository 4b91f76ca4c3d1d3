package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/workflow"
)

// TestRunsFailCompensate: runs fail -compensate undoes the failed run's
// completed steps once a worker runs; without it they are kept.
func TestRunsFailCompensate(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/skein.db"
	unbook := workflow.NewStep("unbook", func(context.Context, workflow.Compensation[string, string]) (struct{}, error) {
		return struct{}{}, nil
	})
	book := workflow.WithCompensation(workflow.NewStep("book", func(context.Context, string) (string, error) { return "booked", nil }), unbook)
	saga := evolve(book)
	var ids []string
	reg := func(fn func(ctx context.Context, c *client.Client)) { deployedDefs(t, db, fn, unbook, book, saga) }
	reg(func(ctx context.Context, c *client.Client) {
		for _, tok := range []string{"trip/1", "trip/2"} {
			r, err := saga.Start(ctx, c, tok)
			if err != nil {
				t.Fatal(err)
			}
			for _, err := c.GetHookByToken(ctx, tok); err != nil; _, err = c.GetHookByToken(ctx, tok) {
				if ctx.Err() != nil {
					t.Fatal("the hook never appeared")
				}
				time.Sleep(5 * time.Millisecond)
			}
			ids = append(ids, r.ID())
		}
	})
	args := []string{"-db", db}
	res := cli(append(args, "runs", "fail", ids[0], "-compensate")...)
	res.expect(t, 0, "failed run "+ids[0]+"; its completed steps are compensated")
	if strings.Contains(res.err, "warning") {
		t.Errorf("-compensate warned: %s", res.err)
	}
	// Without -compensate the steps are kept, and the CLI says so.
	cli(append(args, "runs", "fail", ids[1])...).expect(t, 0, "failed run "+ids[1],
		"warning: run "+ids[1]+" has 1 completed step that declared a compensation, not undone")
	reg(func(ctx context.Context, c *client.Client) {
		for i, want := range []int{1, 0} {
			info, err := c.WaitDeactivated(ctx, ids[i])
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Compensations.Succeeded; got != want || info.Compensations.Requested != (want == 1) {
				t.Errorf("run %d: compensations %+v, want %d succeeded", i, info.Compensations, want)
			}
		}
	})
}
