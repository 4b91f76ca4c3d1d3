package dynamoworld_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go/middleware"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// TestWatchRequests checks what a one-run watch costs (doc.go, Watching):
// one Query of the run's partition per look and nothing else, looks that
// back off while the run is idle, and an event delivered at the next
// look once it commits.
func TestWatchRequests(t *testing.T) {
	dynamotest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := &dynamotest.Meter{}
	w := dynamotest.NewWorld(t, dynamotest.Options{
		APIOptions: []func(*middleware.Stack) error{m.Add},
		Knobs:      []knobs.Option{knobs.WithWatchPoll(20*time.Millisecond, 320*time.Millisecond)},
	})
	defer w.Close()
	run := world.NewIDSource(nil, nil).New(world.PrefixRun)
	if _, err := w.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "watched", Input: json.RawMessage(`1`)}}, {Data: &world.RunStarted{}},
	}}); err != nil {
		t.Fatal(err)
	}
	m.Reset()
	got := make(chan world.WatchEvent)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(done)
		for e, err := range w.Watch(wctx, &world.WatchParams{RunID: run, After: world.RunCursor(run, 2)}) {
			if err != nil {
				return
			}
			got <- e
		}
	}()
	defer func() { stop(); <-done }()
	// Idle, it waits 10, 20, 40, 80, 160, 320ms between looks: seven looks
	// take 630ms or more, however fast the machine (a slow one only spaces
	// them more); looks 20ms apart would take 120ms.
	for m.Count("DynamoDB") < 7 && ctx.Err() == nil {
		time.Sleep(2 * time.Millisecond)
	}
	took := time.Since(began)
	if idle, q := m.Count("DynamoDB"), m.Count("DynamoDB/Query"); q != idle || took < 600*time.Millisecond {
		t.Fatalf("an idle watch made %d requests (%d Queries) in %s, want Queries only, backing off to 320ms (seven looks in 630ms or more): %s", idle, q, took, m.Summary())
	}
	start := time.Now()
	if _, err := w.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{Data: &world.RunCompleted{Output: json.RawMessage(`2`)}}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-got:
		// Within a look: 320ms at most, and a Query, on a machine however
		// busy (bounded generously).
		if e.Event.Seq != 3 || e.Event.Type() != world.EventRunCompleted || time.Since(start) > 5*time.Second {
			t.Fatalf("got event %d %s after %s, want run_completed (3) within a look", e.Event.Seq, e.Event.Type(), time.Since(start))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run_completed not delivered within 10s")
	}
	<-done // the watch of a finished run ends by itself
	if s := m.Summary(); strings.Contains(s, "GetItem") || strings.Contains(s, "BatchGetItem") {
		t.Fatalf("the watch read more than the run's partition: %s", s)
	}
}

// TestWatchAllRequests checks what a look of an every-run watch costs:
// four keys-only index Queries a shard (the runs pending, running and
// held, and the newest) and one Query of each tracked run's partition; no
// item is read by key.
func TestWatchAllRequests(t *testing.T) {
	dynamotest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := &dynamotest.Meter{}
	w := dynamotest.NewWorld(t, dynamotest.Options{
		APIOptions: []func(*middleware.Stack) error{m.Add},
	})
	defer w.Close()
	ids := world.NewIDSource(nil, nil)
	runs := []string{ids.New(world.PrefixRun), ids.New(world.PrefixRun)}
	for _, run := range runs {
		if _, err := w.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{
			{Data: &world.RunCreated{WorkflowName: "watched"}}, {Data: &world.RunStarted{}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := w.WatchCursor(ctx, &world.WatchParams{})
	if err != nil {
		t.Fatal(err)
	}
	m.Reset()
	wctx, stop := context.WithCancel(ctx)
	got := make(chan world.WatchEvent, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := &world.WatchParams{After: c, PollMin: time.Hour, PollMax: time.Hour} // one look, then a long wait
		for e, err := range w.Watch(wctx, p) {
			if err != nil {
				return
			}
			got <- e
		}
	}()
	defer func() { stop(); <-done }()
	want := 4*dynamoworld.IndexShards + 2
	for m.Count("DynamoDB") < want && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // nothing more comes within the look
	if q, all := m.Count("DynamoDB/Query"), m.Count("DynamoDB"); q != want || all != want {
		t.Fatalf("one look over 2 idle runs: %d requests (%d Queries), want %d Queries: %s", all, q, want, m.Summary())
	}
	select {
	case e := <-got:
		t.Fatalf("an idle look delivered %s of %s", e.Event.Type(), e.Event.RunID)
	default:
	}
}
