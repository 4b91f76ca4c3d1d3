package dynamoworld_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

var ids = world.NewIDSource(nil, nil)

// TestFaultsAreRetriedAndLoseNothing drives runs through a World whose
// clients fail a fifth of all request attempts: throttling
// (ProvisionedThroughputExceededException, RequestLimitExceeded, SQS
// ThrottlingException, S3 SlowDown), 500s, 503s, answers lost after the
// request was applied, and transaction conflicts (TransactionCanceledException
// with TransactionConflict reasons, TransactionConflictException). Every
// call must succeed, and a clean World must then find exactly what was
// written: no event lost or doubled, every stream chunk once and in order,
// every message delivered.
func TestFaultsAreRetriedAndLoseNothing(t *testing.T) {
	dynamotest.Require(t)
	ctx := context.Background()
	inj := dynamotest.NewInjector(20261122, 0.2,
		dynamotest.Throttled, dynamotest.LimitExceeded, dynamotest.ServerError,
		dynamotest.Unavailable, dynamotest.LostAnswer, dynamotest.TxConflict)
	covered := []string{
		"DynamoDB/throttled", "DynamoDB/limit-exceeded", "DynamoDB/500", "DynamoDB/503", "DynamoDB/lost-answer",
		"DynamoDB/TransactWriteItems/transaction-conflict", "DynamoDB/TransactWriteItems/lost-answer",
		"SQS/throttled", "SQS/lost-answer", "S3/throttled", "S3/lost-answer", "S3/PutObject/lost-answer",
	}
	// Each of these at least once, however the requests interleave (the
	// rest at random): the checks below need them.
	inj.Cover = covered
	faulty := dynamotest.ClientsWith(t, dynamoworld.ClientOptions{MaxAttempts: 12},
		[]knobs.Option{knobs.WithMaxBackoff(200 * time.Millisecond)}, inj.Add)
	clean := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, clean)
	w, err := dynamoworld.New(ctx, dynamotest.Config(faulty, r, url))
	if err != nil {
		t.Fatalf("New through faults: %v", err)
	}
	defer w.Close()
	check, err := dynamoworld.New(ctx, dynamotest.Config(clean, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()

	const runs, steps, writes = 6, 12, 10
	type outcome struct {
		run   string
		token string
		msgs  []string
	}
	out := make([]outcome, runs)
	var wg sync.WaitGroup
	errs := make([]error, runs)
	for i := range runs {
		wg.Go(func() {
			out[i].run = ids.New(world.PrefixRun)
			out[i].token = "tok-" + out[i].run
			out[i].msgs, errs[i] = faultWorkload(ctx, w, out[i].run, out[i].token, steps, writes, i == 0)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d through faults: %v (faults so far: %s)", i, err, inj)
		}
	}
	t.Logf("faults injected: %s", inj)
	counts := inj.Counts()
	for _, k := range covered {
		if counts[k] == 0 {
			t.Errorf("no %s fault was injected: the test proves nothing about it", k)
		}
	}

	wantEvents := 2 + 2 + 3*(steps-1) + 3 + 2 + 2
	want := map[string]bool{}
	for _, o := range out {
		evs := allEvents(t, check, o.run)
		if len(evs) != wantEvents {
			t.Fatalf("run %s: %d events after the faults, want %d", o.run, len(evs), wantEvents)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("run %s: event %d has Seq %d", o.run, i, e.Seq)
			}
		}
		run, err := check.GetRun(ctx, &world.GetRunParams{RunID: o.run})
		if err != nil || run.Status != world.RunStatusCompleted || run.LastSeq != int64(wantEvents) {
			t.Fatalf("run %s after the faults: %+v, %v", o.run, run, err)
		}
		steps, err := check.ListSteps(ctx, &world.ListStepsParams{RunID: o.run})
		if err != nil || len(steps.Items) != 12 {
			t.Fatalf("run %s: steps %v, %v", o.run, steps, err)
		}
		for _, s := range steps.Items {
			if s.Status != world.StepStatusCompleted || s.Attempt != 1 {
				t.Fatalf("run %s: step %s is %s at attempt %d, want completed at 1", o.run, s.StepID, s.Status, s.Attempt)
			}
		}
		page, err := check.ReadStream(ctx, &world.ReadStreamParams{RunID: o.run, Name: "out", Limit: 1000})
		if err != nil || !page.Done || len(page.Chunks) != 2*writes {
			t.Fatalf("run %s: stream %d chunks done %v, %v; want %d and done", o.run, len(page.Chunks), page.Done, err, 2*writes)
		}
		for i, c := range page.Chunks {
			if want := fmt.Sprintf("w%d-c%d", i/2, i%2); string(c.Data) != want {
				t.Fatalf("run %s: chunk %d is %q, want %q", o.run, i, c.Data, want)
			}
		}
		if _, err := check.GetHookByToken(ctx, &world.GetHookByTokenParams{Token: o.token}); !errors.Is(err, world.ErrNotFound) {
			t.Fatalf("run %s: the disposed hook's token: %v", o.run, err)
		}
		for _, m := range o.msgs {
			want[m] = true
		}
	}
	got := map[string]int{}
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		ds, err := check.Receive(ctx, &world.ReceiveParams{Max: 10, Wait: time.Second, Visibility: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			got[d.MessageID]++
			if err := check.Ack(ctx, &world.AckParams{Receipt: d.Receipt}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for m := range want {
		if got[m] == 0 {
			t.Fatalf("message %s was never delivered (got %v)", m, got)
		}
	}
}

// faultWorkload runs one run from creation to completion through w and
// returns the IDs of the messages it enqueued.
func faultWorkload(ctx context.Context, w *dynamoworld.World, runID, token string, steps, writes int, large bool) ([]string, error) {
	app := func(evs ...world.EventInput) error {
		_, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: evs})
		return err
	}
	input := json.RawMessage(`{"n":1}`)
	if large {
		input = json.RawMessage(`"` + strings.Repeat("x", 100<<10) + `"`) // claim-checked
	}
	if err := app(world.EventInput{Data: &world.RunCreated{WorkflowName: "faults", Input: input}}, world.EventInput{Data: &world.RunStarted{}}); err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	lease := &world.RunLeaseParams{RunID: runID, Owner: "worker", TTL: time.Minute}
	if _, err := w.AcquireRunLease(ctx, lease); err != nil {
		return nil, fmt.Errorf("lease: %w", err)
	}
	prev := ""
	for k := range steps {
		id := ids.New(world.PrefixStep)
		var evs []world.EventInput
		if prev != "" {
			evs = append(evs, world.EventInput{CorrelationID: prev, Data: &world.StepCompleted{Result: json.RawMessage(fmt.Sprint(k))}})
		}
		evs = append(evs,
			world.EventInput{CorrelationID: id, Data: &world.StepCreated{StepName: fmt.Sprint("step-", k), Input: json.RawMessage(fmt.Sprint(k))}},
			world.EventInput{CorrelationID: id, Data: &world.StepStarted{LeaseTTL: time.Minute}})
		if err := app(evs...); err != nil {
			return nil, fmt.Errorf("step %d: %w", k, err)
		}
		prev = id
	}
	if _, err := w.RenewRunLease(ctx, lease); err != nil {
		return nil, fmt.Errorf("renew: %w", err)
	}
	hook := ids.New(world.PrefixHook)
	if err := app(world.EventInput{CorrelationID: hook, Data: &world.HookCreated{Token: token}}); err != nil {
		return nil, fmt.Errorf("hook: %w", err)
	}
	if err := app(world.EventInput{CorrelationID: hook, Data: &world.HookReceived{Payload: json.RawMessage(`{"ok":true}`)}},
		world.EventInput{CorrelationID: hook, Data: &world.HookDisposed{}}); err != nil {
		return nil, fmt.Errorf("hook use: %w", err)
	}
	wait := ids.New(world.PrefixWait)
	if err := app(world.EventInput{CorrelationID: wait, Data: &world.WaitCreated{ResumeAt: time.Now()}}); err != nil {
		return nil, fmt.Errorf("wait: %w", err)
	}
	if err := app(world.EventInput{CorrelationID: wait, Data: &world.WaitCompleted{}}); err != nil {
		return nil, fmt.Errorf("wait done: %w", err)
	}
	for i := range writes {
		if err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: runID, Name: "out", Chunks: [][]byte{[]byte(fmt.Sprintf("w%d-c0", i)), []byte(fmt.Sprintf("w%d-c1", i))}}); err != nil {
			return nil, fmt.Errorf("stream write %d: %w", i, err)
		}
	}
	if err := w.CloseStream(ctx, &world.CloseStreamParams{RunID: runID, Name: "out"}); err != nil {
		return nil, fmt.Errorf("stream close: %w", err)
	}
	body, _ := world.EncodeMessage(world.Message{RunID: runID})
	first, err := w.Enqueue(ctx, &world.EnqueueParams{Body: body, IdempotencyKey: "continue-" + runID})
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	again, err := w.Enqueue(ctx, &world.EnqueueParams{Body: body, IdempotencyKey: "continue-" + runID})
	if err != nil || !again.Duplicate || again.MessageID != first.MessageID {
		return nil, fmt.Errorf("enqueue again: %+v, %v; want the first message %s as a duplicate", again, err, first.MessageID)
	}
	msgs := []string{first.MessageID}
	for range 6 {
		plain, err := w.Enqueue(ctx, &world.EnqueueParams{Body: body, Delay: time.Second})
		if err != nil {
			return nil, fmt.Errorf("enqueue without key: %w", err)
		}
		msgs = append(msgs, plain.MessageID)
	}
	if err := app(world.EventInput{CorrelationID: prev, Data: &world.StepCompleted{Result: json.RawMessage(`"last"`)}},
		world.EventInput{Data: &world.RunCompleted{Output: json.RawMessage(`"done"`)}}); err != nil {
		return nil, fmt.Errorf("complete: %w", err)
	}
	if err := w.ReleaseRunLease(ctx, lease); err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	return msgs, nil
}

func allEvents(t *testing.T, w world.World, runID string) []world.Event {
	t.Helper()
	var all []world.Event
	cursor := ""
	for {
		p, err := w.ListEvents(context.Background(), &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Limit: 100, Cursor: cursor}})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p.Items...)
		if !p.HasMore {
			return all
		}
		cursor = p.Cursor
	}
}
