package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
)

// runLocal runs defs on an in-memory local world and returns a c and a
// function that stops everything.
func runLocal(defs ...workflow.Definition) (*client.Client, func()) {
	w, err := localworld.Open(localworld.Config{}) // "" path: in memory
	if err != nil {
		panic(err)
	}
	reg := workflow.NewRegistry()
	if err := reg.Register(defs...); err != nil {
		panic(err)
	}
	wk, err := worker.New(worker.Config{World: w, Registry: reg})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	return wk.Client(), func() { cancel(); <-done; _ = w.Close() }
}

type Order struct {
	ID    string
	Items []string
	Total int
}

type Receipt struct{ Charged int }

type Approval struct {
	OK bool
	By string
}

// job is the input of withTimeout: how long the work takes and how long
// the workflow waits for it.
type job struct {
	Work, Timeout time.Duration
}

var chargeCard = workflow.NewStep("charge-card", func(ctx context.Context, o Order) (Receipt, error) {
	return Receipt{Charged: o.Total}, nil
})

var printLabel = workflow.NewStep("print-label", func(ctx context.Context, item string) (string, error) {
	return "label:" + item, nil
})

var fulfilOrder = workflow.New("fulfil-order", func(ctx workflow.Context, o Order) (string, error) {
	r, err := chargeCard.Call(ctx, o)
	if err != nil {
		return "", err
	}
	labels := make([]workflow.Future[string], len(o.Items))
	for i, item := range o.Items {
		labels[i] = printLabel.Go(ctx, item)
	}
	ls, err := workflow.All(ctx, labels...)
	if err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	return fmt.Sprintf("order %s: charged %d, %s", o.ID, r.Charged, strings.Join(ls, " ")), nil
})

func Example() {
	c, stop := runLocal(fulfilOrder, chargeCard, printLabel)
	defer stop()
	ctx := context.Background()

	run, err := fulfilOrder.Start(ctx, c, Order{ID: "42", Items: []string{"book", "pen"}, Total: 30})
	if err != nil {
		panic(err)
	}
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	// Output: order 42: charged 30, label:book label:pen <nil>
}

var approveOrder = workflow.New("approve-order", func(ctx workflow.Context, id string) (string, error) {
	h := workflow.NewHook[Approval](ctx, workflow.HookOptions{Token: "approve/" + id})
	a, err := h.Receive(ctx)
	if err != nil {
		return "", err
	}
	if !a.OK {
		// A workflow's error fails its run: workflows are not retried, so
		// there is no Fatal here (Fatal is for steps).
		return "", errors.New("not approved")
	}
	return "approved by " + a.By, nil
})

func ExampleNewHook() {
	c, stop := runLocal(approveOrder)
	defer stop()
	ctx := context.Background()

	run, _ := approveOrder.Start(ctx, c, "44")
	// Resume the hook once the run has registered it.
	for {
		if _, err := c.ResumeHook(ctx, "approve/44", Approval{OK: true, By: "ada"}); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	// Output: approved by ada <nil>
}

var flaky = workflow.NewStep("flaky", func(ctx context.Context, _ struct{}) (int, error) {
	m, _ := workflow.StepMetadataFrom(ctx)
	if m.Attempt < 3 {
		return 0, workflow.RetryAfter(errors.New("try again"), time.Millisecond)
	}
	return m.Attempt, nil
})

var refuses = workflow.NewStep("refuses", func(ctx context.Context, _ struct{}) (int, error) {
	return 0, workflow.Fatal(errors.New("card declined"))
})

var retrying = workflow.New("retrying", func(ctx workflow.Context, _ struct{}) (string, error) {
	n, err := flaky.Call(ctx, struct{}{})
	if err != nil {
		return "", err
	}
	_, err = refuses.Call(ctx, struct{}{})
	// A fatal error is not retried: the step fails on its first attempt.
	var se *workflow.StepError
	if !errors.As(err, &se) {
		return "", err
	}
	return fmt.Sprintf("flaky succeeded on attempt %d; refuses: attempts=%d (%v)", n, se.Attempt, err), nil
})

func ExampleFatal() {
	c, stop := runLocal(retrying, flaky, refuses)
	defer stop()
	ctx := context.Background()

	run, _ := retrying.Start(ctx, c, struct{}{})
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	// Output: flaky succeeded on attempt 3; refuses: attempts=1 (step "refuses" failed (attempt 1): card declined) <nil>
}

var slowPath = workflow.NewStep("slow-path", func(ctx context.Context, d time.Duration) (string, error) {
	select {
	case <-time.After(d):
		return "slow path", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
})

var withTimeout = workflow.New("with-timeout", func(ctx workflow.Context, o job) (string, error) {
	result := slowPath.Go(ctx, o.Work)
	timeout := workflow.NewTimer(ctx, o.Timeout)
	if workflow.Select(ctx, result, timeout) == 1 {
		return "timed out", nil
	}
	return result.Get(ctx)
})

func ExampleSelect() {
	c, stop := runLocal(withTimeout, slowPath)
	defer stop()
	ctx := context.Background()

	// Work that ends long before its timeout, then a timeout that ends long
	// before the work: each outcome holds however slow the machine is.
	for _, o := range []job{{Work: 0, Timeout: time.Hour}, {Work: time.Hour, Timeout: 50 * time.Millisecond}} {
		run, _ := withTimeout.Start(ctx, c, o)
		out, _ := run.Result(ctx)
		fmt.Println(out)
	}
	// Output:
	// slow path
	// timed out
}
