package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/world"
)

// printer writes progress lines, stamped with the time since the program
// started, from several goroutines.
type printer struct {
	mu    sync.Mutex
	out   io.Writer
	start time.Time
}

func (p *printer) line(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "  %6.2fs  %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}

func (p *printer) plain(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, format+"\n", args...)
}

// watcher follows a run's event log and prints the events worth a line:
// steps done or retried, the approval hook, the sleep, the run's end.
type watcher struct {
	w     world.World
	runID string
	p     *printer
	// labels names steps by ID, from their step_created events; attempts
	// counts their attempts, from step_started.
	labels   map[string]string
	attempts map[string]int
	cursor   string
	// state, for the summary of a resumed run: what was done, in order.
	done     map[string]int
	order    []string
	waiting  string // what the run waits for, in words
	terminal bool
	// comps follows the compensations (undos) of the run's steps, which
	// may go on after the run's end.
	comps compTally
}

// compTally counts a run's compensations from its log, as the World does
// (world.Compensations): owed by completed steps that declared one, and
// running; compensate is set when the run's end asked for them.
type compTally struct {
	declared      map[string]bool
	owed, running int
	compensate    bool
	attempts      map[string]int
}

// pending reports whether compensations are still to come: one running,
// or one owed by a run whose end asked for them.
func (c *compTally) pending() bool { return c.running > 0 || c.compensate && c.owed > 0 }

func newWatcher(w world.World, runID string, p *printer) *watcher {
	return &watcher{w: w, runID: runID, p: p, labels: make(map[string]string), attempts: make(map[string]int), done: make(map[string]int),
		comps: compTally{declared: make(map[string]bool), attempts: make(map[string]int)}}
}

// catchUp reads the events recorded so far without printing them, and
// returns a summary of what the run has done and what it waits for.
func (wa *watcher) catchUp(ctx context.Context) (string, error) {
	if _, err := wa.poll(ctx, false); err != nil {
		return "", err
	}
	var parts []string
	for _, name := range wa.order {
		part := name + " ✓"
		if n := wa.done[name]; n > 1 {
			part += fmt.Sprintf("×%d", n)
		}
		parts = append(parts, part)
	}
	summary := "nothing done yet"
	if len(parts) > 0 {
		summary = "done: " + strings.Join(parts, ", ")
	}
	return summary, nil
}

// follow prints new events until the run ends (and the compensations its
// end asked for have ended) or ctx is done.
func (wa *watcher) follow(ctx context.Context) error {
	for !wa.terminal || wa.comps.pending() {
		n, err := wa.poll(ctx, true)
		if err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// poll reads the events appended since the last poll.
func (wa *watcher) poll(ctx context.Context, print bool) (int, error) {
	total := 0
	for {
		page, err := wa.w.ListEvents(ctx, &world.ListEventsParams{RunID: wa.runID, Pagination: world.Pagination{Cursor: wa.cursor}})
		if err != nil {
			return total, err
		}
		for _, ev := range page.Items {
			wa.event(ev, print)
		}
		total += len(page.Items)
		if page.Cursor != "" {
			wa.cursor = page.Cursor
		}
		if !page.HasMore {
			return total, nil
		}
	}
}

func (wa *watcher) event(ev world.Event, print bool) {
	say := func(format string, args ...any) {
		if print {
			wa.p.line(format, args...)
		}
	}
	switch d := ev.Data.(type) {
	case *world.StepCreated:
		wa.labels[ev.CorrelationID] = stepLabel(d)
		wa.comps.declared[ev.CorrelationID] = d.Compensation != ""
	case *world.StepStarted:
		wa.attempts[ev.CorrelationID] = d.Attempt - d.Interrupted // a start after a lost worker repeats its attempt
	case *world.StepRetrying:
		say("↻ %s attempt %d failed: %s (retrying in %s)", wa.labels[ev.CorrelationID], wa.attempts[ev.CorrelationID],
			d.Error.Message, roundDuration(time.Until(d.RetryAfter)))
	case *world.StepCompleted:
		if wa.comps.declared[ev.CorrelationID] {
			wa.comps.owed++
		}
		wa.markDone(d.StepName)
		if n := wa.attempts[ev.CorrelationID]; n > 1 {
			say("✓ %s (attempt %d)", wa.labels[ev.CorrelationID], n)
		} else {
			say("✓ %s", wa.labels[ev.CorrelationID])
		}
	case *world.StepFailed:
		say("✗ %s failed: %s", wa.labels[ev.CorrelationID], d.Error.Message)
	case *world.CompStarted, *world.CompRetryScheduled, *world.CompSucceeded, *world.CompFailed:
		wa.compEvent(ev, say)
	case *world.HookCreated:
		wa.waiting = fmt.Sprintf("waiting for approval (hook %q)", d.Token)
		say("%s", wa.waiting)
	case *world.HookConflict:
		say("✗ hook %q is held by run %s", d.Token, d.ConflictingRunID)
	case *world.HookReceived:
		wa.waiting = ""
		var a Approval
		if json.Unmarshal(d.Payload, &a) == nil && a.By != "" {
			verdict, done := "approved", "approval"
			if !a.Approved {
				verdict, done = "rejected", "approval (rejected)"
			}
			wa.markDone(done)
			say("✓ %s by %s: %q", verdict, a.By, a.Note)
		}
	case *world.WaitCreated:
		wa.waiting = fmt.Sprintf("sleeping until %s (the courier's pickup slot)", d.ResumeAt.Local().Format("15:04:05.000"))
		say("%s", wa.waiting)
	case *world.WaitCompleted:
		wa.waiting = ""
		say("✓ woke up")
	case *world.RunCompleted:
		wa.terminal = true
		say("✓ run completed")
	case *world.RunFailed:
		wa.terminal, wa.comps.compensate = true, d.Compensate
		say("✗ run failed (%s): %s", d.ErrorCode, d.Error.Message)
	case *world.RunCancelled:
		wa.terminal, wa.comps.compensate = true, d.Compensate
		say("✗ run cancelled: %s", d.Reason)
	case *world.RunHeld:
		// The code changed under a run in flight: it waits for code that
		// fits its log (skein runs retry), or for skein runs fail.
		say("⏸ run held (%s), retried at %s: %s", d.ErrorCode, d.RetryAt.Local().Format("15:04:05"), d.Error.Message)
	}
}

// compEvent counts and tells a compensation's event: the undo of a
// completed step, its failed attempts and its outcome.
func (wa *watcher) compEvent(ev world.Event, say func(string, ...any)) {
	c, label := &wa.comps, wa.labels[ev.CorrelationID]
	switch d := ev.Data.(type) {
	case *world.CompStarted:
		if c.attempts[ev.CorrelationID] == 0 {
			c.owed, c.running = max(c.owed-1, 0), c.running+1
			say("↩ undoing %s (%s)", label, d.Compensation)
		}
		c.attempts[ev.CorrelationID] = d.Attempt - d.Interrupted
	case *world.CompRetryScheduled:
		say("↻ undo of %s attempt %d failed: %s (retrying in %s)", label, c.attempts[ev.CorrelationID],
			d.Error.Message, roundDuration(time.Until(d.RetryAfter)))
	case *world.CompSucceeded:
		c.running = max(c.running-1, 0)
		wa.markDone("undo " + label)
		say("↩ %s undone", label)
	case *world.CompFailed:
		c.running = max(c.running-1, 0)
		say("✗ could not undo %s: %s", label, d.Error.Message)
	}
}

func (wa *watcher) markDone(what string) {
	if wa.done[what] == 0 {
		wa.order = append(wa.order, what)
	}
	wa.done[what]++
}

// stepLabel names a step in a progress line: reserve-stock shows its SKU.
func stepLabel(d *world.StepCreated) string {
	var l Line
	if d.StepName == reserveStock.Name() && json.Unmarshal(d.Input, &l) == nil && l.SKU != "" {
		return fmt.Sprintf("%s %s", d.StepName, l.SKU)
	}
	return d.StepName
}

// printStream prints the run's default stream live, from index start, until
// the stream is closed (when the run ends) or ctx is done.
func printStream(ctx context.Context, c *client.Client, runID string, start int64, p *printer) {
	for chunk, err := range c.ReadStream(ctx, runID, client.StreamOptions{Start: start}) {
		if err != nil {
			return
		}
		p.line("│ %s", chunk.Data)
	}
}

// roundDuration keeps a duration short enough to read.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d <= 0:
		return 0
	case d < time.Second:
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
