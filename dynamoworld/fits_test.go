package dynamoworld

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// wide returns n events per i of mk(i), in order.
func wide(n int, mk func(i int) []world.EventInput) []world.EventInput {
	var out []world.EventInput
	for i := range n {
		out = append(out, mk(i)...)
	}
	return out
}

func stepsCreated(n int, input json.RawMessage) []world.EventInput {
	return wide(n, func(i int) []world.EventInput {
		return []world.EventInput{ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: fmt.Sprint("s", i), Input: input})}
	})
}

func stepsStarted(n int) []world.EventInput {
	return wide(n, func(i int) []world.EventInput {
		id := testIDs.New(world.PrefixStep)
		return []world.EventInput{
			ev(id, &world.StepCreated{StepName: fmt.Sprint("s", i), Input: json.RawMessage(`[1]`)}),
			ev(id, &world.StepStarted{LeaseTTL: time.Minute}),
		}
	})
}

func hooksCreated(n int) []world.EventInput {
	return wide(n, func(i int) []world.EventInput {
		return []world.EventInput{ev(testIDs.New(world.PrefixHook), &world.HookCreated{Token: fmt.Sprint("fits/", testIDs.New(""), "/", i), IsWebhook: i%2 == 0, Metadata: json.RawMessage(`{"i":1}`)})}
	})
}

func waitsCreated(n int) []world.EventInput {
	at := time.Now().Add(time.Hour)
	return wide(n, func(int) []world.EventInput {
		return []world.EventInput{ev(testIDs.New(world.PrefixWait), &world.WaitCreated{ResumeAt: at})}
	})
}

// mixed creates and starts steps, hooks and waits, then completes the
// steps and waits, receives on and disposes of the hooks, and, when end is
// set, completes the run.
func mixed(n int, end bool) []world.EventInput {
	steps, hooks, waits := make([]string, n), make([]string, n), make([]string, n)
	var out []world.EventInput
	for i := range n {
		steps[i], hooks[i], waits[i] = testIDs.New(world.PrefixStep), testIDs.New(world.PrefixHook), testIDs.New(world.PrefixWait)
		out = append(out,
			ev(steps[i], &world.StepCreated{StepName: "mix", Input: json.RawMessage(`"in"`)}),
			ev(steps[i], &world.StepStarted{LeaseTTL: time.Minute}),
			ev(hooks[i], &world.HookCreated{Token: "mix/" + hooks[i], IsWebhook: i%2 == 1}),
			ev(waits[i], &world.WaitCreated{ResumeAt: time.Now()}))
	}
	for i := range n {
		out = append(out,
			ev(steps[i], &world.StepCompleted{Result: json.RawMessage(`"out"`)}),
			ev(waits[i], &world.WaitCompleted{}),
			ev(hooks[i], &world.HookReceived{Payload: json.RawMessage(`1`)}))
		if i%2 == 0 {
			out = append(out, ev(hooks[i], &world.HookDisposed{}))
		}
	}
	if end {
		out = append(out, ev("", &world.RunCompleted{Output: json.RawMessage(`"done"`)}))
	}
	return out
}

// TestAppendFitsCounts pins the counting rule: the commit item, the run's
// head, body and idempotency item for run events, one item per step and
// wait, three per hook, none for hook_received.
func TestAppendFitsCounts(t *testing.T) {
	runCreated := []world.EventInput{
		ev("", &world.RunCreated{WorkflowName: "wf", IdempotencyKey: "k"}),
		ev("", &world.RunStarted{}),
	}
	hook := testIDs.New(world.PrefixHook)
	received := wide(150, func(int) []world.EventInput {
		return []world.EventInput{ev(hook, &world.HookReceived{Payload: json.RawMessage(`1`)})}
	})
	longName := strings.Repeat("n", 60<<10)
	named := wide(150, func(int) []world.EventInput {
		return []world.EventInput{ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: longName})}
	})
	compStarted := wide(150, func(int) []world.EventInput {
		return []world.EventInput{ev(testIDs.New(world.PrefixStep), &world.CompStarted{})}
	})
	compEnded := wide(150, func(i int) []world.EventInput {
		id := testIDs.New(world.PrefixStep)
		if i%2 == 0 {
			return []world.EventInput{ev(id, &world.CompStarted{}), ev(id, &world.CompSucceeded{})}
		}
		return []world.EventInput{ev(id, &world.CompRetryScheduled{Error: &world.ErrorData{Message: "x"}}), ev(id, &world.CompFailed{Error: &world.ErrorData{Message: "x"}})}
	})
	longComp := wide(150, func(int) []world.EventInput {
		return []world.EventInput{ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: "s", Compensation: longName})}
	})
	for _, c := range []struct {
		name   string
		events []world.EventInput
		want   int
	}{
		{"none", nil, 0},
		{"comp_started", compStarted, 99},
		{"comp_started_and_ended", compEnded, 198},
		{"long_compensation_names", longComp, 57},
		{"one", stepsCreated(1, nil), 1},
		{"steps_created", stepsCreated(150, nil), 99},
		{"steps_created_and_started", stepsStarted(150), 198},
		{"hooks", hooksCreated(60), 33},
		{"waits", waitsCreated(150), 99},
		{"run_created_then_steps", append(runCreated, stepsCreated(150, nil)...), 2 + 96},
		{"run_started_then_steps", append(runCreated[1:], stepsCreated(150, nil)...), 1 + 98},
		{"hook_received_writes_nothing", received, 150},
		// 1 KiB for the commit, 1 KiB and 60 KiB per step: 57 fit 3.5 MB.
		{"long_step_names", named, 57},
		{"too_big_alone", []world.EventInput{ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: strings.Repeat("n", 4<<20)})}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(&store{})
			if got := w.AppendFits(c.events); got != c.want {
				t.Fatalf("AppendFits of %d events = %d, want %d", len(c.events), got, c.want)
			}
			if got := world.AppendFits(w, c.events); got != c.want {
				t.Fatalf("world.AppendFits of %d events = %d, want %d", len(c.events), got, c.want)
			}
		})
	}
}

// TestAppendFitsChunksCommit appends wide commits in chunks of AppendFits
// through the fake: every chunk is one transaction of at most 100 items,
// within a few items (lazy steps) of the count, so the count is safe and
// not wasteful.
func TestAppendFitsChunksCommit(t *testing.T) {
	for _, c := range []struct {
		name    string
		created bool // the events create the run
		events  []world.EventInput
		end     bool
	}{
		{"steps_created_with_inputs", false, stepsCreated(150, jsonOf(20<<10)), false},
		{"steps_created_and_started", false, stepsStarted(150), false},
		{"hooks", false, hooksCreated(60), false},
		{"waits", false, waitsCreated(100), false},
		{"mixed", false, mixed(40, false), false},
		{"mixed_ending_the_run", false, mixed(40, true), true},
		{"run_created_and_mixed", true, append([]world.EventInput{
			ev("", &world.RunCreated{WorkflowName: "wf", IdempotencyKey: testIDs.New(""), Input: json.RawMessage(`{}`)}),
			ev("", &world.RunStarted{}),
		}, mixed(40, false)...), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ddb := &fakeDDB{}
			w := newFakeWorld(t, ddb, newFakeS3(), nil)
			var run string
			if c.created {
				run = testIDs.New(world.PrefixRun)
			} else {
				run = startRun(t, w)
			}
			var last int64
			if !c.created {
				last = 2
			}
			before := len(ddb.writes)
			rest, chunks, fullest := c.events, 0, 0
			for len(rest) > 0 {
				n, counted, _ := appendFits(rest)
				if got := w.AppendFits(rest); got != n || n < 1 || n > len(rest) {
					t.Fatalf("AppendFits = %d (appendFits %d) of %d events", got, n, len(rest))
				}
				res, err := w.Append(context.Background(), &world.AppendParams{RunID: run, Events: rest[:n], IfLastSeq: last})
				if err != nil {
					t.Fatalf("chunk %d (%d of %d events left) refused: %v", chunks, n, len(rest), err)
				}
				if res.Run.LastSeq != last+int64(n) {
					t.Fatalf("chunk %d: LastSeq %d, want %d", chunks, res.Run.LastSeq, last+int64(n))
				}
				last = res.Run.LastSeq
				if len(ddb.writes) != before+chunks+1 {
					t.Fatalf("chunk %d: %d transactions, want one", chunks, len(ddb.writes)-before-chunks)
				}
				written := len(ddb.writes[len(ddb.writes)-1].TransactItems)
				switch {
				case written > maxTransactionItems:
					t.Fatalf("chunk %d: %d items, over %d", chunks, written, maxTransactionItems)
				case written > counted && !(c.end && len(rest) == n):
					t.Fatalf("chunk %d: %d items, AppendFits counted %d", chunks, written, counted)
				case counted-written > 2*maxLazySteps: // new lazy steps, and lazy ones the chunk leaves bare
					t.Fatalf("chunk %d: %d items, AppendFits counted %d: wasteful", chunks, written, counted)
				}
				fullest = max(fullest, written)
				rest = rest[n:]
				chunks++
			}
			if len(c.events) > 150 && chunks < 2 {
				t.Fatalf("%d events in %d chunk", len(c.events), chunks)
			}
			t.Logf("%d events in %d chunks, the fullest of %d items", len(c.events), chunks, fullest)
		})
	}
}

// Names are bounded (world.MaxNameLength), so the longest cannot make a
// commit too big for a transaction: chunks of steps with the longest names
// are as long as chunks of steps with short ones, and every chunk commits.
func TestAppendFitsWithTheLongestNames(t *testing.T) {
	ddb := &fakeDDB{}
	w := newFakeWorld(t, ddb, newFakeS3(), nil)
	run := startRun(t, w)
	steps := func(name string) []world.EventInput {
		return wide(150, func(int) []world.EventInput {
			return []world.EventInput{ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: name})}
		})
	}
	evs := steps(strings.Repeat("n", world.MaxNameLength))
	if long, short := w.AppendFits(evs), w.AppendFits(steps("s")); long != short {
		t.Errorf("AppendFits: %d steps with %d-byte names, %d with short ones; want the same", long, world.MaxNameLength, short)
	}
	for rest := evs; len(rest) > 0; {
		n := w.AppendFits(rest)
		if _, err := appendEvents(w, run, rest[:n]...); err != nil {
			t.Fatalf("a chunk of %d steps with %d-byte names: %v", n, world.MaxNameLength, err)
		}
		rest = rest[n:]
	}
}
