package skeintest_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/workflow"
)

// Checking the next version of a workflow against histories exported from
// the runs of the current one (testdata/replay/order-v1.jsonl: three runs of
// v1, which reserves stock, waits for an approval hook, sleeps and ships).
// v2 checks for fraud first: without a patch, every run that reserved stock
// before the deploy would be held; under workflow.Patched they replay.
func ExampleCheckHistory() {
	step := func(name string) *workflow.Step[string, string] {
		return workflow.NewStep(name, func(_ context.Context, id string) (string, error) { return name + ":" + id, nil })
	}
	reserve, ship, fraudCheck := step("reserve"), step("ship"), step("fraud-check")
	v2 := func(patched bool) *workflow.Workflow[histOrder, string] {
		return workflow.New("order", func(ctx workflow.Context, o histOrder) (string, error) {
			if !patched || workflow.Patched(ctx, "add-fraud-check") {
				if _, err := fraudCheck.Call(ctx, o.ID); err != nil {
					return "", err
				}
			}
			if _, err := reserve.Call(ctx, o.ID); err != nil {
				return "", err
			}
			a, err := workflow.NewHook[histApproval](ctx, workflow.HookOptions{Token: "approve/" + o.ID}).Receive(ctx)
			if err != nil || !a.OK {
				return "refused", err
			}
			if err := workflow.Sleep(ctx, o.Wait); err != nil {
				return "", err
			}
			return ship.Call(ctx, o.ID)
		})
	}
	for _, patched := range []bool{false, true} {
		reg := workflow.NewRegistry().MustRegister(v2(patched), reserve, ship, fraudCheck)
		f, err := os.Open("testdata/replay/order-v1.jsonl")
		if err != nil {
			panic(err)
		}
		rep, err := skeintest.CheckHistory(reg, f)
		f.Close()
		if err != nil {
			panic(err)
		}
		fmt.Printf("patched %v:\n", patched)
		for _, r := range rep.Runs {
			if d := r.Divergence; d != nil {
				code, _, _ := strings.Cut(d.Asked, " (") // without the step's ID
				fmt.Printf("  %s run: diverges at event %d (%s): %s\n", r.Status, d.Seq, d.EventType, code)
				continue
			}
			fmt.Printf("  %s run: compatible\n", r.Status)
		}
	}
	// Output:
	// patched false:
	//   running run: diverges at event 3 (step_created): the workflow asks for step "fraud-check"
	//   running run: diverges at event 3 (step_created): the workflow asks for step "fraud-check"
	//   completed run: diverges at event 3 (step_created): the workflow asks for step "fraud-check"
	// patched true:
	//   running run: compatible
	//   running run: compatible
	//   completed run: compatible
}
