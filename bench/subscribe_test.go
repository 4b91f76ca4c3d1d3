package bench

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	skclient "github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// BenchmarkSubscribeLatency measures how long after its commit an event
// reaches a subscriber (client.Client.Subscribe) on the local world: from
// the moment Append returns (the commit is durable and acknowledged) to
// the moment the subscriber's Next returns it, when a negative gap (the
// subscriber woke before the writer's Append returned) counts as 0. One
// writer commits one event (a step's completion, its creation and start
// before it) every 5ms to one run; the subscriber follows that run, or
// every run. Modes:
//
//   - memory, log: the subscriber in the writer's process, woken by the
//     commit (no polling);
//   - log-readonly: the subscriber on a read-only World over the same file
//     (what the CLI uses while a worker holds the store), which looks at
//     the file every 5ms, backing off to 100ms while idle;
//   - memory-polling: a World without world.Watcher, which the Client polls
//     through the read API (10ms, backing off to 1s while idle).
//
// It reports the p50, p99 and max latency in milliseconds. Run with a
// fixed count: go test -run ^$ -bench SubscribeLatency -benchtime 400x ./bench/
func BenchmarkSubscribeLatency(b *testing.B) {
	for _, m := range []struct {
		name     string
		file     bool
		readOnly bool
		hide     bool
	}{
		{"memory", false, false, false},
		{"log", true, false, false},
		{"log-readonly", true, true, false},
		{"memory-polling", false, false, true},
	} {
		for _, all := range []bool{false, true} {
			name := m.name + "/one-run"
			if all {
				name = m.name + "/all-runs"
			}
			b.Run(name, func(b *testing.B) {
				cfg := localworld.Config{}
				if m.file {
					cfg.Path = filepath.Join(b.TempDir(), "sub.db")
				}
				w, err := localworld.Open(cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				var sw world.World = w
				switch {
				case m.readOnly:
					ro, err := localworld.Open(localworld.Config{Path: cfg.Path, ReadOnly: true})
					if err != nil {
						b.Fatal(err)
					}
					defer ro.Close()
					sw = ro
				case m.hide:
					sw = noWatcher{w}
				}
				subBench(b, w, sw, all)
			})
		}
	}
}

// noWatcher hides a World's world.Watcher.
type noWatcher struct{ world.World }

func subBench(b *testing.B, w, sw world.World, all bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := lwIDs.New(world.PrefixRun)
	if _, err := w.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "bench"}}, {Data: &world.RunStarted{}},
	}}); err != nil {
		b.Fatal(err)
	}
	client, err := skclient.New(skclient.Config{World: sw})
	if err != nil {
		b.Fatal(err)
	}
	o := skclient.SubscribeOptions{Types: []world.EventType{world.EventStepCompleted}}
	if !all {
		o.RunID, o.After = run, world.RunCursor(run, 2)
	}
	sub, err := client.Subscribe(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	got := make(chan time.Time, b.N)
	go func() {
		for range b.N {
			if _, err := sub.Next(); err != nil {
				return
			}
			got <- time.Now()
		}
	}()
	time.Sleep(50 * time.Millisecond) // an every-run subscription takes its position
	committed := make([]time.Time, b.N)
	b.ResetTimer()
	for i := range b.N {
		step := lwIDs.New(world.PrefixStep)
		if _, err := w.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{
			{CorrelationID: step, Data: &world.StepCreated{StepName: "s", Input: json.RawMessage(`1`)}},
			{CorrelationID: step, Data: &world.StepStarted{LeaseTTL: time.Minute}},
		}}); err != nil {
			b.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		if _, err := w.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{
			{CorrelationID: step, Data: &world.StepCompleted{Result: json.RawMessage(`2`)}},
		}}); err != nil {
			b.Fatal(err)
		}
		committed[i] = time.Now()
	}
	lat := make([]time.Duration, b.N)
	for i := range b.N {
		select {
		case at := <-got:
			lat[i] = max(0, at.Sub(committed[i]))
		case <-time.After(10 * time.Second):
			b.Fatalf("event %d of %d not delivered", i, b.N)
		}
	}
	b.StopTimer()
	b.ReportMetric(percentile(lat, 50), "p50-ms")
	b.ReportMetric(percentile(lat, 99), "p99-ms")
	b.ReportMetric(percentile(lat, 100), "max-ms")
	b.ReportMetric(0, "ns/op")
}
