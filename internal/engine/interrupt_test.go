package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// A step body's behaviour on one call, in interruptTest's script.
const (
	bodyLose = "lose" // the executor is lost mid-step: nothing is recorded
	bodyFail = "fail" // the step returns an error (a retry, if any are left)
	bodyOK   = "ok"
)

// lossCase is one case of TestExecutorLossIsNotARetry.
type lossCase struct {
	name       string
	background bool
	maxRetries int
	maxLost    int // Config.MaxInterruptions; 0 for the default
	script     []string
	wantStatus world.RunStatus
	wantCode   string
	wantSeen   []int // StepInfo.Attempt of each body call
}

// An attempt interrupted by the loss of its executor is not the step
// failing: it is run again as the same attempt, does not use the step's
// retries, and is bounded by Config.MaxInterruptions with its own error
// code. Executors are lost by cutting off the invocation (its context) as
// soon as the step body starts, as a killed process would be, then waiting
// out the step lease; inline (the run's continuation runs the step) and in
// the background (a queue message names the step).
func TestExecutorLossIsNotARetry(t *testing.T) {
	t.Parallel()
	for _, tc := range []lossCase{
		{
			name: "more losses than attempts", maxRetries: 1,
			script:     []string{bodyLose, bodyLose, bodyLose, bodyLose, bodyOK},
			wantStatus: world.RunStatusCompleted, wantSeen: []int{1, 1, 1, 1, 1},
		},
		{
			name: "more losses than attempts in the background", background: true, maxRetries: 1,
			script:     []string{bodyLose, bodyLose, bodyLose, bodyOK},
			wantStatus: world.RunStatusCompleted, wantSeen: []int{1, 1, 1, 1},
		},
		{
			name: "losses between retries", maxRetries: 1,
			script:     []string{bodyLose, bodyFail, bodyLose, bodyLose, bodyOK},
			wantStatus: world.RunStatusCompleted, wantSeen: []int{1, 1, 2, 2, 2},
		},
		{
			name: "retries still run out", maxRetries: 1,
			script:     []string{bodyLose, bodyFail, bodyLose, bodyFail},
			wantStatus: world.RunStatusFailed, wantCode: world.CodeUserError, wantSeen: []int{1, 1, 2, 2},
		},
		{
			name: "more losses than allowed", maxRetries: 3, maxLost: 2,
			script:     []string{bodyLose, bodyLose, bodyLose, bodyOK},
			wantStatus: world.RunStatusFailed, wantCode: world.CodeStepExecutorLost, wantSeen: []int{1, 1, 1},
		},
		{
			name: "more losses than allowed in the background", background: true, maxRetries: 3, maxLost: 2,
			script:     []string{bodyLose, bodyLose, bodyLose, bodyOK},
			wantStatus: world.RunStatusFailed, wantCode: world.CodeStepExecutorLost, wantSeen: []int{1, 1, 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

// lossLease is the step lease of TestExecutorLossIsNotARetry.
const lossLease = 100 * time.Millisecond

func (tc lossCase) run(t *testing.T) {
	cfg := Config{Options: Options{StepLeaseTTL: lossLease, MaxInterruptions: tc.maxLost}}
	if tc.background {
		cfg.InlineConcurrency = 1 // the workflow's second step is queued
	}
	h := newHarness(t, nil, cfg)
	var (
		mu   sync.Mutex
		seen []int
	)
	lost := make(chan struct{}, 1)
	h.reg.step("fragile", tc.maxRetries, func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		info, _ := StepInfoFrom(ctx)
		mu.Lock()
		n := len(seen)
		seen = append(seen, info.Attempt)
		mu.Unlock()
		switch tc.script[min(n, len(tc.script)-1)] {
		case bodyLose:
			lost <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		case bodyFail:
			return nil, errBoom
		}
		return mustJSON("done"), nil
	})
	h.reg.step("first", 0, func(context.Context, json.RawMessage) (json.RawMessage, error) { return mustJSON(1), nil })
	h.reg.wf("lossy", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		if tc.background {
			c.Step("first", nil)
		}
		f := c.Step("fragile", nil)
		c.Await(f.Done)
		res, fail := f.Result()
		if fail != nil {
			// Wrapped, as the SDK's StepError wraps a step's error.
			return nil, &Failure{Data: &world.ErrorData{Type: "StepError", Message: "step failed", Cause: fail}}
		}
		return res, nil
	})
	runID := h.start("lossy", nil)
	tc.deliver(h, runID, lost)
	run := h.wait(runID)
	evs := h.events(runID)
	if run.Status != tc.wantStatus || run.ErrorCode != tc.wantCode {
		t.Fatalf("run %s %q (%+v), want %s %q; log:\n%s", run.Status, run.ErrorCode, run.Error, tc.wantStatus, tc.wantCode, describeLog(evs))
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, tc.wantSeen) {
		t.Fatalf("the step body saw attempts %v, want %v", seen, tc.wantSeen)
	}
	if tc.wantCode == world.CodeStepExecutorLost {
		st, err := h.w.GetStep(context.Background(), &world.GetStepParams{RunID: runID, StepID: stepNamed(evs, "fragile")})
		if err != nil {
			t.Fatal(err)
		}
		if st.Error == nil || st.Error.Code != world.CodeStepExecutorLost || st.Error.Type != TypeExecutorLost || st.Interrupted != tc.maxLost+1 {
			t.Fatalf("step %+v error %+v, want %s after %d interrupted attempts", st, st.Error, TypeExecutorLost, tc.maxLost+1)
		}
	}
}

// deliver hands the run's messages to the engine until the run ends: its
// continuation, or, in the background case once the step exists, the
// step's own message. An invocation whose step body reports on lost is
// cut off there, and the next waits out the step lease.
func (tc lossCase) deliver(h *harness, runID string, lost <-chan struct{}) {
	for range 3 * len(tc.script) {
		if r, err := h.w.GetRun(context.Background(), &world.GetRunParams{RunID: runID}); err != nil || r.Status.Terminal() {
			return
		}
		msg := world.Message{RunID: runID}
		if id := stepNamed(h.events(runID), "fragile"); tc.background && id != "" {
			msg.StepID = id
		}
		ctx, cancel := context.WithCancel(context.Background())
		stop := make(chan struct{})
		go func() {
			select {
			case <-lost:
				cancel() // the executor is lost
			case <-stop:
			}
		}()
		err := h.eng.HandleDelivery(ctx, msg, 1)
		close(stop)
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			h.t.Fatalf("delivery of %+v: %v", msg, err)
		}
		time.Sleep(lossLease + 50*time.Millisecond) // the lost attempt's lease expires
	}
}

// stepNamed returns the ID of the step the log created under name.
func stepNamed(evs []world.Event, name string) string {
	for _, ev := range evs {
		if d, ok := ev.Data.(*world.StepCreated); ok && d.StepName == name {
			return ev.CorrelationID
		}
	}
	return ""
}

func describeLog(evs []world.Event) string {
	var b []byte
	for _, ev := range evs {
		data, _ := json.Marshal(ev.Data)
		b = append(b, "  "+string(ev.Type())+" "+ev.CorrelationID+" "+string(data)+"\n"...)
	}
	return string(b)
}
