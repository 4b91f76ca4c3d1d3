package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"os"
	"time"

	"github.com/skeinflow/skein/workflow"
)

// ChaosPlan is the shape of one Chaos run: Serial steps one after the other,
// a fan-out of Fan steps, one step that fails its first attempt, a sleep, a
// hook whose token is "chaos/"+Key, and a child run of ChildSteps serial
// steps. Every step body reports its start and end to Sink (an HTTP URL;
// none when empty) and works for up to Work.
type ChaosPlan struct {
	Key        string        `json:"key"`
	Sink       string        `json:"sink,omitempty"`
	Serial     int           `json:"serial"`
	Fan        int           `json:"fan"`
	ChildSteps int           `json:"childSteps"`
	Work       time.Duration `json:"work"`
	Sleep      time.Duration `json:"sleep"`
	// Pad makes the input larger (past a claim-check threshold, say).
	Pad string `json:"pad,omitempty"`
	// Compensate makes the run compensate its steps at the end
	// (workflow.Compensate): each runs ChaosUndo, most recent first.
	Compensate bool `json:"compensate,omitempty"`
}

// ChaosHookToken is the token of the hook a Chaos run with key waits on.
func ChaosHookToken(key string) string { return "chaos/" + key }

// ChaosApproval is the payload a Chaos run's hook receives.
type ChaosApproval struct {
	By string `json:"by"`
}

// ChaosResult is what a Chaos run returns: the number of its own steps that
// completed, who approved it, and the child's result.
type ChaosResult struct {
	Steps      int    `json:"steps"`
	ApprovedBy string `json:"approvedBy"`
	Child      int    `json:"child"`
}

// ChaosTask is one ChaosStep: Label names it in the result, the attempts up
// to Failures fail.
type ChaosTask struct {
	Sink     string        `json:"sink,omitempty"`
	Label    string        `json:"label"`
	Work     time.Duration `json:"work"`
	Failures int           `json:"failures,omitempty"`
}

// ChaosRecord is what a ChaosStep body reports to the sink, once as it
// starts (Phase "start") and once as it ends ("end"), so that a test can
// tell which bodies ran, in which process, and whether two ran at once. A
// ChaosUndo body reports as the step it undoes, its StepID prefixed with
// ChaosUndoPrefix.
type ChaosRecord struct {
	RunID   string `json:"runId"`
	StepID  string `json:"stepId"`
	Label   string `json:"label"`
	Attempt int    `json:"attempt"`
	PID     int    `json:"pid"`
	Phase   string `json:"phase"`
	At      int64  `json:"at"` // Unix nanoseconds
}

// ChaosUndoPrefix marks the records of a compensation's body (ChaosUndo).
const ChaosUndoPrefix = "undo:"

// ChaosUndo is ChaosStep's compensation: it reports its start and end to
// the sink, as the step it undoes (StepID prefixed with ChaosUndoPrefix),
// and works for a share of the step's Work.
var ChaosUndo = workflow.NewStep("chaos-undo", func(ctx context.Context, c workflow.Compensation[ChaosTask, string]) (struct{}, error) {
	md, _ := workflow.StepMetadataFrom(ctx)
	run, _ := workflow.WorkflowMetadataFrom(ctx)
	rec := ChaosRecord{RunID: run.RunID, StepID: ChaosUndoPrefix + md.StepID, Label: "undo " + c.Result, Attempt: md.Attempt, PID: os.Getpid()}
	if err := report(ctx, c.Input.Sink, rec, "start"); err != nil {
		return struct{}{}, err
	}
	if w := c.Input.Work / 4; w > 0 {
		select {
		case <-time.After(w):
		case <-ctx.Done():
			_ = report(context.WithoutCancel(ctx), c.Input.Sink, rec, "end")
			return struct{}{}, ctx.Err()
		}
	}
	return struct{}{}, report(ctx, c.Input.Sink, rec, "end")
}, workflow.StepOptions{MaxRetries: 3, Backoff: workflow.ExponentialBackoff(100*time.Millisecond, time.Second)})

// ErrChaosAttempt is the failure of a ChaosStep attempt that the plan wants
// to fail.
var ErrChaosAttempt = errors.New("chaos: this attempt fails on purpose")

// ChaosStep reports its start to the sink, works for a share of Work (the
// same for the same step and attempt), reports its end, and returns its
// label (or, for the attempts up to Failures, ErrChaosAttempt). Retries back
// off from 100ms. ChaosUndo is its compensation.
var ChaosStep = workflow.WithCompensation(workflow.NewStep("chaos-step", func(ctx context.Context, t ChaosTask) (string, error) {
	md, _ := workflow.StepMetadataFrom(ctx)
	run, _ := workflow.WorkflowMetadataFrom(ctx)
	rec := ChaosRecord{RunID: run.RunID, StepID: md.StepID, Label: t.Label, Attempt: md.Attempt, PID: os.Getpid()}
	if err := report(ctx, t.Sink, rec, "start"); err != nil {
		return "", err
	}
	if t.Work > 0 {
		h := fnv.New64a()
		fmt.Fprintf(h, "%s/%d", md.StepID, md.Attempt)
		timer := time.NewTimer(time.Duration(h.Sum64() % uint64(t.Work)))
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			// The body ends here too: say so, whatever ctx says.
			_ = report(context.WithoutCancel(ctx), t.Sink, rec, "end")
			return "", ctx.Err()
		}
	}
	if err := report(ctx, t.Sink, rec, "end"); err != nil {
		return "", err
	}
	if md.Attempt <= t.Failures {
		return "", fmt.Errorf("%s attempt %d: %w", t.Label, md.Attempt, ErrChaosAttempt)
	}
	return t.Label, nil
}, workflow.StepOptions{MaxRetries: 3, Backoff: workflow.ExponentialBackoff(100*time.Millisecond, time.Second)}), ChaosUndo)

// report posts rec, at phase, to sink.
func report(ctx context.Context, sink string, rec ChaosRecord, phase string) error {
	if sink == "" {
		return nil
	}
	rec.Phase, rec.At = phase, time.Now().UnixNano()
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sink, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("chaos sink: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("chaos sink: %s", resp.Status)
	}
	return nil
}

// chaosTask is the plan's task labelled label.
func chaosTask(p ChaosPlan, label string, failures int) ChaosTask {
	return ChaosTask{Sink: p.Sink, Label: label, Work: p.Work, Failures: failures}
}

// ChaosChild runs p.Serial ChaosSteps one after the other and returns how
// many completed.
var ChaosChild = workflow.New("chaos-child", func(ctx workflow.Context, p ChaosPlan) (int, error) {
	for i := range p.Serial {
		if _, err := ChaosStep.Call(ctx, chaosTask(p, fmt.Sprintf("child-%d", i), 0)); err != nil {
			return 0, err
		}
	}
	return p.Serial, nil
})

// Chaos is the mixed workflow of the chaos suite (integration/chaos_test.go):
// serial steps, a fan-out, a retried step, a sleep, a hook and a child run,
// in that order, and, when the plan says so, the compensation of its steps.
var Chaos = workflow.New("chaos", func(ctx workflow.Context, p ChaosPlan) (ChaosResult, error) {
	steps := 0
	for i := range p.Serial {
		if _, err := ChaosStep.Call(ctx, chaosTask(p, fmt.Sprintf("serial-%d", i), 0)); err != nil {
			return ChaosResult{}, err
		}
		steps++
	}
	fs := make([]workflow.Future[string], p.Fan)
	for i := range p.Fan {
		fs[i] = ChaosStep.Go(ctx, chaosTask(p, fmt.Sprintf("fan-%d", i), 0))
	}
	labels, err := workflow.All(ctx, fs...)
	if err != nil {
		return ChaosResult{}, err
	}
	for i, l := range labels {
		if want := fmt.Sprintf("fan-%d", i); l != want {
			return ChaosResult{}, fmt.Errorf("fan-out result %d is %q, want %q", i, l, want)
		}
	}
	steps += len(labels)
	if _, err := ChaosStep.Call(ctx, chaosTask(p, "retried", 1)); err != nil {
		return ChaosResult{}, err
	}
	steps++
	if err := workflow.Sleep(ctx, p.Sleep); err != nil {
		return ChaosResult{}, err
	}
	hook := workflow.NewHook[ChaosApproval](ctx, workflow.HookOptions{Token: ChaosHookToken(p.Key)})
	a, err := hook.Receive(ctx)
	if err != nil {
		return ChaosResult{}, err
	}
	child := p
	child.Serial = p.ChildSteps
	n, err := ChaosChild.Call(ctx, child)
	if err != nil {
		return ChaosResult{}, err
	}
	if p.Compensate {
		if err := workflow.Compensate(ctx); err != nil {
			return ChaosResult{}, err
		}
	}
	return ChaosResult{Steps: steps, ApprovedBy: a.By, Child: n}, nil
})
