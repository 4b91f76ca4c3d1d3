package bench

import (
	"bytes"
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// Webhook flood against MaxRunBytes: 200 POSTs of 700 KB to one webhook
// of a run on the local world (in memory) with the default limits. Before
// MaxRunBytes all were accepted (100 of them stored 92 MB, 395 MB of
// memory); now the run takes what fits in 128 MiB and answers the rest
// 413 (RELIABILITY.md, Bounds).
//
//	go test -run '^$' -bench 'WebhookRunBytesFlood' -benchtime 1x ./bench/
//
// It reports delivered (202s), refused (413s), first-refused (the POST
// that met the bound), stored-MB (the run's PayloadBytes) and peak-RSS-MB
// (the process's VmHWM: store, worker and all).
func BenchmarkWebhookRunBytesFlood(b *testing.B) {
	for range b.N {
		benchWebhookRunBytesFlood(b)
	}
}

func benchWebhookRunBytesFlood(b *testing.B) {
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		b.Fatal(err)
	}
	flood := workflow.New("flood-bytes", func(ctx workflow.Context, _ int) (int, error) {
		wh := workflow.NewWebhook(ctx, workflow.WebhookOptions{})
		for n := 0; ; n++ {
			if _, err := wh.Receive(ctx); err != nil {
				return n, err
			}
		}
	})
	reg := workflow.NewRegistry()
	if err := reg.Register(flood); err != nil {
		b.Fatal(err)
	}
	wk, err := worker.New(worker.Config{World: lw, Consumer: lw, Registry: reg}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	client, err := client.New(client.Config{World: lw, Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	defer func() { cancel(); <-done; _ = lw.Close() }()
	run, err := flood.Start(ctx, client, 0)
	if err != nil {
		b.Fatal(err)
	}
	token := waitWebhook(b, lw, run.ID())
	hooks := worker.WebhookHandler(client)
	body := bytes.Repeat([]byte("x"), 700_000)
	delivered, refused, first := 0, 0, 0
	for i := 1; i <= 200; i++ {
		rec := httptest.NewRecorder()
		hooks.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, workflow.WebhookPath+token, bytes.NewReader(body)))
		switch rec.Code {
		case http.StatusAccepted:
			delivered++
		case http.StatusRequestEntityTooLarge:
			if rec.Header().Get("Content-Type") != "application/problem+json" {
				b.Fatalf("POST %d: 413 without a problem+json body", i)
			}
			refused++
			if first == 0 {
				first = i
			}
		default:
			b.Fatalf("POST %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	r, err := lw.GetRun(ctx, &world.GetRunParams{RunID: run.ID()})
	if err != nil || r.Status.Terminal() {
		b.Fatalf("run %+v, %v: want it waiting", r, err)
	}
	b.ReportMetric(float64(delivered), "delivered")
	b.ReportMetric(float64(refused), "refused")
	b.ReportMetric(float64(first), "first-refused")
	b.ReportMetric(float64(r.PayloadBytes)/1e6, "stored-MB")
	b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
}

// peakRSSMB is the process's peak resident set (VmHWM), 0 where
// /proc/self/status does not say.
func peakRSSMB() float64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(st), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1e3
		}
	}
	return 0
}
