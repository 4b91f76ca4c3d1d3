//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// A chaos run waits on its hook until the test sends it a payload. The
// test sends it as a caller that wants the payload delivered does: it
// retries what a correct World may return under load (a failed request, a
// write that gave up under contention, a call that timed out) until the
// payload lands, the hook has a payload from any sender, or the run has
// ended; it logs every error, and it reports the refusal a correct World
// never makes (no hook, though the token named one and the run has neither
// ended nor received a payload) as a violation.

// resumeAttempt bounds one call of the resumer: a caller gives up on a call
// that hangs, and tries again.
const resumeAttempt = 30 * time.Second

// resumeChaosHook sends times payloads at once to the hook of run runID
// (the chaos run with key, whose hook the caller found) and waits until
// each has landed or is no longer needed (resumeChaosOnce). logf gets every
// error, notef what each sender did. It returns the violations.
func resumeChaosHook(ctx context.Context, c *client.Client, runID, key string, times int, logf, notef func(string, ...any)) error {
	errs := make([]error, times)
	var wg sync.WaitGroup
	for i := range times {
		wg.Go(func() {
			errs[i] = resumeChaosOnce(ctx, c, runID, demo.ChaosHookToken(key), fmt.Sprintf("approver-%d", i), logf, notef)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// resumeChaosOnce sends one payload, by approver by, and retries it until
// it lands, the hook has a payload or the run has ended, or ctx ends. A
// *client.RequestError (hook not found) is final: expected once the hook has a
// payload or the run has ended, and otherwise a violation.
func resumeChaosOnce(ctx context.Context, c *client.Client, runID, token, by string, logf, notef func(string, ...any)) error {
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, resumeAttempt)
		_, err := c.ResumeHook(actx, token, demo.ChaosApproval{By: by})
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			notef("%s: payload by %s landed (attempt %d)", stamp(), by, attempt)
			return nil
		}
		logf("%s: run %s: ResumeHook(%q) by %s, attempt %d: %v", stamp(), runID, token, by, attempt, err)
		settled, err2 := hookSettled(ctx, c, runID)
		switch {
		case err2 != nil:
			logf("%s: run %s: reading its log: %v", stamp(), runID, err2)
		case settled != "":
			notef("%s: %s stops: %s", stamp(), by, settled)
			return nil
		case errors.Is(err, world.ErrNotFound):
			return fmt.Errorf("run %s: ResumeHook(%q) by %s found no hook, though the token named one and the run has neither ended nor received a payload: %w",
				runID, token, by, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Duration(min(attempt, 10)) * 50 * time.Millisecond):
		}
	}
}

// hookSettled reads run runID's log and says why no payload is needed any
// more ("the run ended", "the hook has a payload"), or "".
func hookSettled(ctx context.Context, c *client.Client, runID string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, resumeAttempt)
	defer cancel()
	evs, err := runEvents(ctx, sdk.ClientWorld(c), runID)
	if err != nil {
		return "", err
	}
	why := ""
	for _, ev := range evs {
		if ev.Type().Terminal() {
			return "the run ended", nil
		}
		if _, ok := ev.Data.(*world.HookReceived); ok {
			why = "the hook has a payload"
		}
	}
	return why, nil
}

func stamp() string { return time.Now().UTC().Format("15:04:05.000") }

// resumeLog keeps what each run's resumer did (the emulator suite logs it
// for a run that violates) and the resumers' violations.
type resumeLog struct {
	mu         sync.Mutex
	lines      map[string][]string
	errors     int // errors the resumers logged
	violations []string
}

func newResumeLog() *resumeLog { return &resumeLog{lines: map[string][]string{}} }

func (l *resumeLog) note(runID, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines[runID] = append(l.lines[runID], line)
}

// noteError keeps an error line of run runID's resumer.
func (l *resumeLog) noteError(runID, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors++
	l.lines[runID] = append(l.lines[runID], line)
}

// errorCount returns how many errors the resumers logged.
func (l *resumeLog) errorCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errors
}

func (l *resumeLog) violate(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.violations = append(l.violations, err.Error())
}

// failures returns the resumers' violations.
func (l *resumeLog) failures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.violations...)
}

// logRuns logs what the resumers of runIDs did.
func (l *resumeLog) logRuns(t *testing.T, runIDs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range runIDs {
		if lines, ok := l.lines[id]; ok {
			t.Logf("the resumer of run %s:\n  %s", id, strings.Join(lines, "\n  "))
		}
	}
}

// resumeWhenWaiting waits for the hook of run runID (the chaos run with
// key) and sends it times payloads at once (resumeChaosHook); it gives up
// when the run ends first (the stuck run check reports a run that never
// got there). Every error goes to the test's log, and everything to l.
func resumeWhenWaiting(ctx context.Context, t *testing.T, l *resumeLog, c *client.Client, runID, key string, times int) {
	logf := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		t.Log(line)
		l.noteError(runID, line)
	}
	notef := func(format string, args ...any) { l.note(runID, fmt.Sprintf(format, args...)) }
	for ctx.Err() == nil {
		actx, cancel := context.WithTimeout(ctx, resumeAttempt)
		h, err := c.GetHookByToken(actx, demo.ChaosHookToken(key))
		cancel()
		if err == nil {
			notef("%s: found hook %s", stamp(), h.ID)
			if err := resumeChaosHook(ctx, c, runID, key, times, logf, notef); err != nil {
				l.violate(err)
			}
			return
		}
		if ctx.Err() == nil && !errors.Is(err, world.ErrNotFound) {
			logf("%s: run %s: GetHookByToken: %v", stamp(), runID, err)
		}
		actx, cancel = context.WithTimeout(ctx, resumeAttempt)
		info, err := c.GetRun(actx, runID)
		cancel()
		if err == nil && info.Status.Terminal() {
			notef("%s: the run ended (%s) before its hook was found", stamp(), info.Status)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
