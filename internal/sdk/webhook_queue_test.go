package sdk_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// queuedWebhook receives n requests on a webhook, disposes of it and
// returns their bodies.
var queuedWebhook = sdk.New("queued-webhook", func(ctx sdk.Context, n int) (string, error) {
	wh := sdk.NewWebhook(ctx, sdk.WebhookOptions{})
	var bodies []string
	for range n {
		r, err := wh.Receive(ctx)
		if err != nil {
			return "", err
		}
		bodies = append(bodies, string(r.Body))
	}
	wh.Dispose(ctx)
	return strings.Join(bodies, "|"), nil
})

// memInbox is an in-memory worker.Inbox.
type memInbox struct {
	mu   sync.Mutex
	objs map[string][]byte
	puts int
}

func (m *memInbox) PutDelivery(_ context.Context, id string, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objs == nil {
		m.objs = map[string][]byte{}
	}
	m.objs[id] = bytes.Clone(b)
	m.puts++
	return nil
}

func (m *memInbox) GetDelivery(_ context.Context, id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objs[id]
	if !ok {
		return nil, world.ErrNotFound
	}
	return bytes.Clone(b), nil
}

func (m *memInbox) DeleteDelivery(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objs, id)
	return nil
}

// queueEnv drives a QueuedWebhookHandler and a Processor by hand over one
// localworld: the test decides when each queue message is processed, and
// how often.
type queueEnv struct {
	t      *testing.T
	lw     *localworld.World
	p      *sdk.Processor
	client *sdk.Client
	hook   http.Handler
	inbox  *memInbox
	logs   *syncBuf
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newQueueEnv(t *testing.T) *queueEnv { return newQueueEnvWith(t, nil) }

// newQueueEnvWith is newQueueEnv with the Processor's World wrapped.
func newQueueEnvWith(t *testing.T, wrap func(world.World) world.World) *queueEnv {
	t.Helper()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	reg := sdk.NewRegistry()
	if err := reg.Register(queuedWebhook); err != nil {
		t.Fatal(err)
	}
	e := &queueEnv{t: t, lw: lw, inbox: &memInbox{}, logs: &syncBuf{}}
	logger := slog.New(slog.NewTextHandler(e.logs, nil))
	var pw world.World = lw
	if wrap != nil {
		pw = wrap(lw)
	}
	if e.p, err = sdk.NewProcessor(sdk.WorkerConfig{World: pw, Registry: reg, Logger: logger, Inbox: e.inbox}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.p.Close)
	e.client = e.p.Client()
	e.hook = sdk.QueuedWebhookHandler(e.client, e.inbox)
	return e
}

// pump processes queue messages until done says so; deliveries are handed
// to onDelivery instead when it is set.
func (e *queueEnv) pump(done func() bool, onDelivery func(body []byte)) {
	e.t.Helper()
	ctx := context.Background()
	for limit := time.Now().Add(20 * time.Second); !done(); {
		if time.Now().After(limit) {
			e.t.Fatal("pump: gave up waiting")
		}
		ds, err := e.lw.Receive(ctx, &world.ReceiveParams{Max: 10, Wait: 20 * time.Millisecond, Visibility: time.Minute})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, d := range ds {
			if onDelivery != nil && sdk.IsWebhookDelivery(d.Body) {
				onDelivery(d.Body)
			} else if err := e.p.Process(ctx, d.Body, d.Attempt); err != nil && !sdk.IsPermanent(err) {
				_ = e.lw.Release(ctx, &world.ReleaseParams{Receipt: d.Receipt})
				continue
			}
			if err := e.lw.Ack(ctx, &world.AckParams{Receipt: d.Receipt}); err != nil {
				e.t.Fatal(err)
			}
		}
	}
}

// start starts a run of queuedWebhook and returns it and its token.
func (e *queueEnv) start(n int) (*sdk.Run[string], string) {
	e.t.Helper()
	run, err := queuedWebhook.Start(context.Background(), e.client, n)
	if err != nil {
		e.t.Fatal(err)
	}
	var token string
	e.pump(func() bool {
		p, err := e.lw.ListHooks(context.Background(), &world.ListHooksParams{RunID: run.ID()})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(p.Items) > 0 {
			token = p.Items[0].Token
		}
		return token != ""
	}, nil)
	return run, token
}

// post sends a request to the handler and returns its status.
func (e *queueEnv) post(token, body string) int {
	rec := httptest.NewRecorder()
	e.hook.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, sdk.WebhookPath+token, strings.NewReader(body)))
	return rec.Code
}

// deliveries takes the delivery messages off the queue, unprocessed.
func (e *queueEnv) deliveries(n int) [][]byte {
	e.t.Helper()
	var out [][]byte
	e.pump(func() bool { return len(out) >= n }, func(b []byte) { out = append(out, b) })
	return out
}

// finish processes the queue until the run has ended, and returns its
// result.
func (e *queueEnv) finish(run *sdk.Run[string]) (string, error) {
	e.t.Helper()
	e.pump(func() bool {
		info, err := e.client.GetRun(context.Background(), run.ID())
		return err == nil && info.Status.Terminal()
	}, nil)
	return run.Result(context.Background())
}

func (e *queueEnv) received(runID string) int {
	e.t.Helper()
	p, err := e.lw.ListEvents(context.Background(), &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Limit: 1000}})
	if err != nil {
		e.t.Fatal(err)
	}
	return countEvents(p.Items, world.EventHookReceived)
}

// TestQueuedWebhookCommitsOnce: the queued handler answers 202 without
// writing the run; the delivery message, processed six times (four of them
// at once), commits the request once.
func TestQueuedWebhookCommitsOnce(t *testing.T) {
	t.Parallel()
	// The four concurrent deliveries all read the run before any of them
	// appends.
	var bw *barrierWorld
	e := newQueueEnvWith(t, func(w world.World) world.World {
		bw = &barrierWorld{World: w, n: 4, all: make(chan struct{})}
		return bw
	})
	run, token := e.start(1)
	if code := e.post(token, "approved"); code != http.StatusAccepted {
		t.Fatalf("POST: %d, want 202", code)
	}
	if n := e.received(run.ID()); n != 0 {
		t.Fatalf("the handler committed %d requests itself", n)
	}
	d := e.deliveries(1)[0]
	// Four deliveries at once (SQS may hand a message to two consumers),
	// then two more.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- e.p.Process(context.Background(), d, i+1)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent delivery: %v", err)
		}
	}
	for i := range 2 {
		if err := e.p.Process(context.Background(), d, i+5); err != nil {
			t.Fatalf("delivery %d: %v", i+5, err)
		}
	}
	if n := e.received(run.ID()); n != 1 {
		t.Fatalf("%d hook_received after six deliveries of one message, want 1", n)
	}
	if bw.seen < 4 {
		t.Errorf("%d appends of the delivery, want the four concurrent ones to reach Append", bw.seen)
	}
	if !strings.Contains(e.logs.String(), "webhook delivery already committed") {
		t.Errorf("no redelivery logged:\n%s", e.logs.String())
	}
	if out, err := e.finish(run); err != nil || out != "approved" {
		t.Errorf("result %q, %v", out, err)
	}
	if strings.Contains(e.logs.String(), token) {
		t.Errorf("the processor's log holds the token:\n%s", e.logs.String())
	}
}

// barrierWorld holds the first n appends of a hook_received until all n
// have arrived (or a second has passed).
type barrierWorld struct {
	world.World
	mu      sync.Mutex
	n, seen int
	all     chan struct{}
}

func (w *barrierWorld) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	if len(p.Events) == 1 {
		if _, ok := p.Events[0].Data.(*world.HookReceived); ok {
			w.mu.Lock()
			w.seen++
			hold := w.seen <= w.n
			if w.seen == w.n {
				close(w.all)
			}
			w.mu.Unlock()
			if hold {
				select {
				case <-w.all:
				case <-time.After(time.Second):
				}
			}
		}
	}
	return w.World.Append(ctx, p)
}

// TestQueuedWebhookInbox: a request too large for a queue message goes
// through the inbox, is committed from there and deleted; an inbox object
// that does not match its message's digest is dropped, not committed.
func TestQueuedWebhookInbox(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 300<<10/16) // 300 KiB
	t.Run("committed", func(t *testing.T) {
		t.Parallel()
		e := newQueueEnv(t)
		run, token := e.start(1)
		if code := e.post(token, big); code != http.StatusAccepted {
			t.Fatalf("POST: %d", code)
		}
		d := e.deliveries(1)[0]
		if len(d) > 1024 || e.inbox.puts != 1 {
			t.Fatalf("message of %d bytes, %d inbox puts: want the request in the inbox", len(d), e.inbox.puts)
		}
		for i := range 2 {
			if err := e.p.Process(context.Background(), d, i+1); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := e.finish(run); err != nil || out != big {
			t.Errorf("result of %d bytes, %v", len(out), err)
		}
		if n := e.received(run.ID()); n != 1 || len(e.inbox.objs) != 0 {
			t.Errorf("%d hook_received, %d inbox objects left; want 1 and 0", n, len(e.inbox.objs))
		}
	})
	t.Run("tampered", func(t *testing.T) {
		t.Parallel()
		e := newQueueEnv(t)
		run, token := e.start(1)
		if code := e.post(token, big); code != http.StatusAccepted {
			t.Fatalf("POST: %d", code)
		}
		d := e.deliveries(1)[0]
		e.inbox.mu.Lock()
		for id, b := range e.inbox.objs {
			b[len(b)/2] ^= 1 // a bit of the base64 body
			e.inbox.objs[id] = b
		}
		e.inbox.mu.Unlock()
		err := e.p.Process(context.Background(), d, 1)
		if !sdk.IsPermanent(err) {
			t.Fatalf("tampered inbox object: %v, want a permanent error", err)
		}
		if n := e.received(run.ID()); n != 0 {
			t.Errorf("%d hook_received from a tampered object", n)
		}
		if !strings.Contains(e.logs.String(), "webhook delivery dropped") {
			t.Errorf("no drop logged:\n%s", e.logs.String())
		}
	})
}

// TestQueuedWebhookToDisposedHook: a request accepted while its hook was
// active, and processed after the workflow disposed of it, is dropped
// and logged; a request to a token no hook holds is answered 404.
func TestQueuedWebhookToDisposedHook(t *testing.T) {
	t.Parallel()
	e := newQueueEnv(t)
	run, token := e.start(1)
	for _, body := range []string{"first", "second"} {
		if code := e.post(token, body); code != http.StatusAccepted {
			t.Fatalf("POST %s: %d", body, code)
		}
	}
	ds := e.deliveries(2)
	if err := e.p.Process(context.Background(), ds[0], 1); err != nil {
		t.Fatal(err)
	}
	if out, err := e.finish(run); err != nil || out != "first" {
		t.Fatalf("result %q, %v", out, err)
	}
	err := e.p.Process(context.Background(), ds[1], 1)
	var pe interface{ Unwrap() error }
	if !sdk.IsPermanent(err) || !errors.As(err, &pe) {
		t.Fatalf("delivery to a disposed hook: %v, want a permanent error", err)
	}
	if n := e.received(run.ID()); n != 1 {
		t.Errorf("%d hook_received, want 1", n)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "webhook delivery dropped") || strings.Contains(logs, token) {
		t.Errorf("want the drop logged, without the token:\n%s", logs)
	}
	if code := e.post(token, "late"); code != http.StatusNotFound {
		t.Errorf("POST after the run: %d, want 404", code)
	}
}
