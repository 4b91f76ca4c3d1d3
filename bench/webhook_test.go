package bench

import (
	"bytes"
	"context"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// Webhook flood: what the k-th request to a webhook a run waits on costs,
// from the POST to the run having taken it in (its step for the request
// recorded), with k-1 requests before it. Each request carries a 1 KiB
// body; the run runs a step per request. Reloading the log at every
// wake-up made the 1,000th request read a thousand payloads; the engine's
// log cache makes it load what was appended since (events-loaded/op).
// Replaying the workflow at every wake-up made it decode every payload it
// had received again; the engine now keeps the workflow alive between
// wake-ups and hands it the new request only, so the k-th request costs
// about what the first does (RELIABILITY.md, Bounds).
//
//	go test -run '^$' -bench 'WebhookFlood' -benchtime 3x ./bench/
//
// It reports ms/op (the k-th delivery) and events-loaded/op (the events
// ListEvents returned for it).

// eventLoads counts the events ListEvents returns.
type eventLoads struct {
	*localworld.World
	n atomic.Int64
}

func (e *eventLoads) ListEvents(ctx context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	page, err := e.World.ListEvents(ctx, p)
	if page != nil {
		e.n.Add(int64(len(page.Items)))
	}
	return page, err
}

func BenchmarkWebhookFlood(b *testing.B) {
	for _, k := range []int{1, 1000} {
		b.Run(fmt.Sprintf("deliveries=%d", k), func(b *testing.B) { benchWebhookFlood(b, k) })
	}
}

func benchWebhookFlood(b *testing.B, k int) {
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		b.Fatal(err)
	}
	w := &eventLoads{World: lw}
	ack := workflow.NewStep("flood-ack", func(ctx context.Context, n int) (int, error) { return n, nil })
	flood := workflow.New("flood", func(ctx workflow.Context, n int) (int, error) {
		wh := workflow.NewWebhook(ctx, workflow.WebhookOptions{})
		for range n {
			req, err := wh.Receive(ctx)
			if err != nil {
				return 0, err
			}
			if _, err := ack.Call(ctx, len(req.Body)); err != nil {
				return 0, err
			}
		}
		return n, nil
	})
	reg := workflow.NewRegistry()
	if err := reg.Register(flood, ack); err != nil {
		b.Fatal(err)
	}
	wk, err := worker.New(worker.Config{World: w, Consumer: lw, Registry: reg}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	client, err := client.New(client.Config{World: w, Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done; _ = lw.Close() })
	hooks := worker.WebhookHandler(client)
	body := bytes.Repeat([]byte("x"), 1<<10)
	var loaded int64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		run, err := flood.Start(ctx, client, k)
		if err != nil {
			b.Fatal(err)
		}
		token := waitWebhook(b, lw, run.ID())
		for i := range k {
			// The session that took the previous request in may still
			// hold the run lease: a request meeting it is bounced
			// (LeaseRetryDelay and more), which is not what is measured.
			waitLeaseFree(b, lw, run.ID())
			if i == k-1 {
				loaded -= w.n.Load()
				b.StartTimer()
			}
			rec := httptest.NewRecorder()
			hooks.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, workflow.WebhookPath+token, bytes.NewReader(body)))
			if rec.Code != http.StatusAccepted {
				b.Fatalf("request %d: %d", i+1, rec.Code)
			}
			// run_created, run_started, hook_created; then per request
			// hook_received, step_created, step_started, step_completed.
			waitSeq(b, lw, run.ID(), int64(3+4*(i+1)))
		}
		b.StopTimer()
		loaded += w.n.Load()
		if got, err := run.Result(ctx); err != nil || got != k {
			b.Fatalf("result %d, %v", got, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
	b.ReportMetric(float64(loaded)/float64(b.N), "events-loaded/op")
}

// waitWebhook returns the token of run's webhook once it exists.
func waitWebhook(b *testing.B, w world.Storage, runID string) string {
	b.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		p, err := w.ListHooks(context.Background(), &world.ListHooksParams{RunID: runID})
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Items) > 0 {
			return p.Items[0].Token
		}
	}
	b.Fatal("no webhook")
	return ""
}

// waitLeaseFree waits until no one holds run's lease, taking it for an
// instant to know.
func waitLeaseFree(b *testing.B, w world.Storage, runID string) {
	b.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		p := &world.RunLeaseParams{RunID: runID, Owner: "bench-probe", TTL: time.Second}
		if _, err := w.AcquireRunLease(ctx, p); err == nil {
			if err := w.ReleaseRunLease(ctx, p); err != nil {
				b.Fatal(err)
			}
			return
		}
	}
	b.Fatalf("run %s kept its lease", runID)
}

// waitSeq waits until run has seq events.
func waitSeq(b *testing.B, w world.Storage, runID string, seq int64) {
	b.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		r, err := w.GetRun(context.Background(), &world.GetRunParams{RunID: runID})
		if err != nil {
			b.Fatal(err)
		}
		if r.LastSeq >= seq {
			return
		}
	}
	b.Fatalf("run %s did not reach %d events", runID, seq)
}
