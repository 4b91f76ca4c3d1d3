package skeintest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/workflow"
)

// logTB is a TB that keeps what is logged.
type logTB struct {
	testing.TB
	mu   sync.Mutex
	logs []string
}

func (l *logTB) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.logs = append(l.logs, fmt.Sprintf(format, args...))
}

func (l *logTB) logged() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.logs, "\n")
}

// TestHintWhenTheClockWaitsForTheTest: a test waiting for a sleeping run
// with Run.Result (which does not move the clock) is told why nothing
// happens, and skeintest.Result then ends the run.
func TestHintWhenTheClockWaitsForTheTest(t *testing.T) {
	t.Parallel()
	nap := workflow.New("nap", func(ctx workflow.Context, _ struct{}) (string, error) {
		return "rested", workflow.Sleep(ctx, time.Hour)
	})
	reg := workflow.NewRegistry()
	if err := reg.Register(nap); err != nil {
		t.Fatal(err)
	}
	tb := &logTB{TB: t}
	env := New(tb, reg)
	env.d.mu.Lock()
	env.d.grace = 10 * time.Millisecond
	env.d.mu.Unlock()
	run, err := nap.Start(env.Context(), env.Client(), struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(env.Context(), 3*time.Second) // the clock does not move: it times out
	defer cancel()
	if _, err := run.Result(ctx); err == nil {
		t.Fatal("Run.Result ended the run: the clock moved without the test waiting in the environment")
	}
	if got := tb.logged(); !strings.Contains(got, "it moves only while the test waits in skeintest.Result") {
		t.Fatalf("no hint logged; logs: %q", got)
	}
	if out, err := Result(env, run); err != nil || out != "rested" {
		t.Fatalf("Result: %q, %v", out, err)
	}
}
