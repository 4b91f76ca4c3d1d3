package webui_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/webui"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// xss is the payload the fixture puts in an input, a stream and an error:
// the dashboard must show it as text.
const xss = `<script>alert(1)</script>`

// Approval is what the fixture's approval hook takes.
type Approval struct {
	By string `json:"by"`
}

// fixture is a local world with a worker in this process and the dashboard
// over it, with runs in every state.
type fixture struct {
	t      *testing.T
	w      world.World
	client *client.Client
	srv    *httptest.Server
	// release lets the running run's blocked step finish; chunks makes
	// it write one stream chunk per value received.
	release chan struct{}
	chunks  chan string
	// finish closes release (once).
	finish func()
	// Run IDs by what they show.
	done, failed, running, sleeping, approval, evil, order, webhook string
}

type fixtureFlows struct {
	release chan struct{}
	chunks  chan string
	once    sync.Once
}

func (f *fixtureFlows) definitions() []workflow.Definition {
	greet := workflow.NewStep("greet", func(_ context.Context, name string) (string, error) { return "hello " + name, nil })
	explode := workflow.NewStep("explode", func(_ context.Context, in string) (string, error) {
		return "", workflow.Fatal(errors.New("exploded on " + in))
	}, workflow.StepOptions{MaxRetries: workflow.NoRetries})
	tick := workflow.NewStep("tick", func(ctx context.Context, _ int) (int, error) {
		out := workflow.Writer(ctx, "")
		if _, err := fmt.Fprint(out, "started\n"); err != nil {
			return 0, err
		}
		for {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-f.release:
				return 1, nil
			case s := <-f.chunks:
				if _, err := fmt.Fprint(out, s); err != nil {
					return 0, err
				}
			}
		}
	})
	shout := workflow.NewStep("shout", func(ctx context.Context, in string) (string, error) {
		_, err := fmt.Fprint(workflow.Writer(ctx, ""), "stream says "+in)
		return in, err
	})
	flaky := workflow.NewStep("charge-card", func(ctx context.Context, cents int) (int, error) {
		if m, _ := workflow.StepMetadataFrom(ctx); m.Attempt == 1 {
			return 0, errors.New("payment gateway: 503 Service Unavailable")
		}
		_, err := fmt.Fprintf(workflow.Writer(ctx, ""), "payment: charged %d cents\n", cents)
		return cents, err
	}, workflow.StepOptions{Backoff: func(int) time.Duration { return 50 * time.Millisecond }})
	reserve := workflow.NewStep("reserve-stock", func(ctx context.Context, sku string) (string, error) {
		time.Sleep(30 * time.Millisecond)
		_, err := fmt.Fprintf(workflow.Writer(ctx, ""), "stock: reserved %s\n", sku)
		return "bin-" + sku, err
	})
	return []workflow.Definition{greet, explode, tick, shout, flaky, reserve,
		workflow.New("fulfil-order", func(ctx workflow.Context, cents int) ([]string, error) {
			if _, err := flaky.Call(ctx, cents); err != nil {
				return nil, err
			}
			var fs []workflow.Future[string]
			for _, sku := range []string{"MUG", "TEE", "STICKER"} {
				fs = append(fs, reserve.Go(ctx, sku))
			}
			bins, err := workflow.All(ctx, fs...)
			if err != nil {
				return nil, err
			}
			return bins, workflow.Sleep(ctx, 100*time.Millisecond)
		}),
		workflow.New("greeting", func(ctx workflow.Context, name string) (string, error) { return greet.Call(ctx, name) }),
		workflow.New("explosion", func(ctx workflow.Context, in string) (string, error) { return explode.Call(ctx, in) }),
		workflow.New("ticker", func(ctx workflow.Context, _ int) (int, error) { return tick.Call(ctx, 0) }),
		workflow.New("sleeper", func(ctx workflow.Context, _ int) (int, error) { return 0, workflow.Sleep(ctx, time.Hour) }),
		workflow.New("approval", func(ctx workflow.Context, _ int) (string, error) {
			h := workflow.NewHook[Approval](ctx, workflow.HookOptions{Token: "approve-1"})
			a, err := h.Receive(ctx)
			if err != nil {
				return "", err
			}
			return "approved by " + a.By, nil
		}),
		workflow.New("webhooked", func(ctx workflow.Context, _ int) (int, error) {
			_, err := workflow.NewWebhook(ctx, workflow.WebhookOptions{}).Receive(ctx)
			return 0, err
		}),
		workflow.New("evil", func(ctx workflow.Context, in string) (string, error) {
			if _, err := shout.Call(ctx, in); err != nil {
				return "", err
			}
			_, err := explode.Call(ctx, in)
			return "", err
		}),
	}
}

// newFixture starts the worker and the dashboard (writable unless
// readOnly) and waits for every run to reach its state.
func newFixture(t *testing.T, cfg webui.Config) *fixture {
	t.Helper()
	w, err := localworld.Open(localworld.Config{Path: filepath.Join(t.TempDir(), "skein.db")})
	if err != nil {
		t.Fatal(err)
	}
	flows := &fixtureFlows{release: make(chan struct{}), chunks: make(chan string)}
	reg := workflow.NewRegistry()
	if err := reg.Register(flows.definitions()...); err != nil {
		t.Fatal(err)
	}
	worker, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 4,
		Logger: slog.New(slog.DiscardHandler)}, knobs.WithPollWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = worker.Run(ctx) }()
	f := &fixture{t: t, w: w, client: worker.Client(), release: flows.release, chunks: flows.chunks,
		finish: func() { flows.once.Do(func() { close(flows.release) }) }}
	cfg.Client = f.client
	h, err := webui.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(h)
	t.Cleanup(func() {
		f.finish()
		f.srv.CloseClientConnections()
		f.srv.Close()
		cancel()
		<-stopped
		_ = w.Close()
	})
	f.done = f.start("greeting", "world")
	f.failed = f.start("explosion", "purpose")
	f.running = f.start("ticker", 0)
	f.sleeping = f.start("sleeper", 0)
	f.approval = f.start("approval", 0)
	f.evil = f.start("evil", xss)
	f.order = f.start("fulfil-order", 4900)
	f.webhook = f.start("webhooked", 0)
	f.await(f.done, world.RunStatusCompleted)
	f.await(f.order, world.RunStatusCompleted)
	f.await(f.failed, world.RunStatusFailed)
	f.await(f.evil, world.RunStatusFailed)
	f.awaitEvent(f.running, world.EventStepStarted)
	f.awaitEvent(f.sleeping, world.EventWaitCreated)
	f.awaitEvent(f.approval, world.EventHookCreated)
	f.awaitEvent(f.webhook, world.EventHookCreated)
	return f
}

func (f *fixture) start(name string, input any) string {
	f.t.Helper()
	id, err := f.client.Start(context.Background(), name, input)
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// await waits for a run to reach status.
func (f *fixture) await(id string, status world.RunStatus) {
	f.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := f.w.GetRun(context.Background(), &world.GetRunParams{RunID: id})
		if err != nil {
			f.t.Fatal(err)
		}
		if r.Status == status {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("run %s (%s) is %s, want %s", id, r.WorkflowName, r.Status, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitEvent waits for a run's log to hold an event of type typ.
func (f *fixture) awaitEvent(id string, typ world.EventType) {
	f.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, err := f.w.ListEvents(context.Background(), &world.ListEventsParams{RunID: id, Pagination: world.Pagination{Limit: world.MaxPageLimit}})
		if err != nil {
			f.t.Fatal(err)
		}
		for _, ev := range p.Items {
			if ev.Type() == typ {
				return
			}
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("run %s has no %s event", id, typ)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// get fetches a page and returns its status and body.
func (f *fixture) get(path string) (int, string) {
	f.t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
