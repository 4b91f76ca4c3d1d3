package dynamoworld_test

import (
	"context"
	"slices"
	"testing"
	"time"

	skclient "github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestPatchOnDynamo: on DynamoDB, a run of v1 (charge, then a hook) waits
// for its approval when v2 is deployed, which adds an audit step under a
// patch before the charge and a receipt step under another after the
// hook. The old run completes, without a hold, on the old path before the
// hook and the new path after it; a run of v2 takes both new paths; and
// once both ended, CheckPatch finds the first patch retirable.
func TestPatchOnDynamo(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mk := func(name string) *workflow.Step[string, string] {
		return workflow.NewStep(name, func(_ context.Context, in string) (string, error) { return name + ":" + in, nil })
	}
	audit, charge, receipt := mk("audit"), mk("charge"), mk("receipt")
	version := func(patched bool) *workflow.Workflow[string, []string] {
		return workflow.New("patched-order", func(ctx workflow.Context, in string) ([]string, error) {
			var trail []string
			call := func(s *workflow.Step[string, string]) error {
				out, err := s.Call(ctx, in)
				trail = append(trail, out)
				return err
			}
			if patched && workflow.Patched(ctx, "add-audit") {
				if err := call(audit); err != nil {
					return nil, err
				}
			}
			if err := call(charge); err != nil {
				return nil, err
			}
			v, err := workflow.NewHook[string](ctx, workflow.HookOptions{Token: "patched-" + in}).Receive(ctx)
			if err != nil {
				return nil, err
			}
			trail = append(trail, v)
			if patched && workflow.Patched(ctx, "add-receipt") {
				if err := call(receipt); err != nil {
					return nil, err
				}
			}
			return trail, nil
		})
	}
	v1, v2 := version(false), version(true)

	client, stop := deployOn(t, ctx, w, workflow.NewRegistry().MustRegister(v1, charge))
	old, err := v1.Start(ctx, client, "old")
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "v1 waiting", func() bool { _, err := client.GetHookByToken(ctx, "patched-old"); return err == nil })
	stop()

	client, stop = deployOn(t, ctx, w, workflow.NewRegistry().MustRegister(v2, audit, charge, receipt))
	defer stop()
	fresh, err := v2.Start(ctx, client, "new")
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "v2 waiting", func() bool { _, err := client.GetHookByToken(ctx, "patched-new"); return err == nil })
	check := &skclient.CheckPatchParams{WorkflowName: "patched-order", PatchID: "add-audit"}
	rep, err := client.CheckPatch(ctx, check)
	if err != nil || rep.Retirable() || !slices.Equal(rep.Open, []string{old.ID()}) || !slices.Equal(rep.Marked, []string{fresh.ID()}) {
		t.Fatalf("CheckPatch while both wait: %+v, %v; want the old run open, the new one marked", rep, err)
	}
	for _, tc := range []struct {
		run  *skclient.Run[[]string]
		in   string
		want []string
	}{
		{old, "old", []string{"charge:old", "ok", "receipt:old"}},
		{fresh, "new", []string{"audit:new", "charge:new", "ok", "receipt:new"}},
	} {
		if _, err := client.ResumeHook(ctx, "patched-"+tc.in, "ok"); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, ctx, "the run to end", func() bool {
			s, err := statusOfID(ctx, client, tc.run.ID())
			if s == world.RunStatusHeld {
				info, _ := client.GetRun(ctx, tc.run.ID())
				t.Fatalf("run %s held: %v", tc.in, info.Hold.Err)
			}
			return err == nil && s.Terminal()
		})
		got, err := tc.run.Result(ctx)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Fatalf("run %s: %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if rep, err := client.CheckPatch(ctx, check); err != nil || !rep.Retirable() {
		t.Fatalf("CheckPatch after both ended: %+v, %v; want retirable", rep, err)
	}
}
