package handler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/internal/lambdaio"
	"github.com/skeinflow/skein/localworld"
	skworker "github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// The API's test workflows.

// Greeting is apiGreet's input.
type Greeting struct {
	Name  string `json:"name"`
	Times int    `json:"times"`
}

var apiShout = workflow.NewStep("api-shout", func(ctx context.Context, g Greeting) (string, error) {
	w := workflow.Writer(ctx, "")
	for i := range g.Times {
		if _, err := fmt.Fprintf(w, "hello %d", i); err != nil {
			return "", err
		}
	}
	if err := w.WriteJSON(map[string]string{"to": g.Name}); err != nil {
		return "", err
	}
	if _, err := w.Write([]byte{0xff, 0xfe}); err != nil {
		return "", err
	}
	named := workflow.Writer(ctx, "log/a")
	if _, err := named.Write([]byte("named")); err != nil {
		return "", err
	}
	return "hello, " + g.Name, nil
})

// apiGreet writes chunks to its default stream and a named one and
// returns a greeting.
var apiGreet = workflow.New("api-greet", func(ctx workflow.Context, g Greeting) (string, error) {
	if g.Name == "" {
		return "", errors.New("no name")
	}
	return apiShout.Call(ctx, g)
})

// Approval is what apiApprove's hook receives.
type Approval struct {
	OK bool   `json:"ok"`
	By string `json:"by"`
}

// apiApprove waits on a hook with the token it is given.
var apiApprove = workflow.New("api-approve", func(ctx workflow.Context, token string) (Approval, error) {
	return workflow.NewHook[Approval](ctx, workflow.HookOptions{Token: token}).Receive(ctx)
})

// apiUnbook undoes apiBook; apiSaga books, then waits on a hook with the
// token it is given (cancelled with compensation, it is unbooked).
var (
	apiUnbook = workflow.NewStep("api-unbook", func(ctx context.Context, c workflow.Compensation[string, string]) (struct{}, error) {
		return struct{}{}, nil
	})
	apiBook = workflow.WithCompensation(workflow.NewStep("api-book", func(ctx context.Context, s string) (string, error) {
		return "booking-" + s, nil
	}), apiUnbook)
	apiSaga = workflow.New("api-saga", func(ctx workflow.Context, token string) (string, error) {
		if _, err := apiBook.Call(ctx, token); err != nil {
			return "", err
		}
		_, err := workflow.NewHook[string](ctx, workflow.HookOptions{Token: token}).Receive(ctx)
		return "", err
	})
)

// apiWebhook waits on a webhook.
var apiWebhook = workflow.New("api-webhook", func(ctx workflow.Context, _ struct{}) (string, error) {
	req, err := workflow.NewWebhook(ctx, workflow.WebhookOptions{}).Receive(ctx)
	if err != nil {
		return "", err
	}
	return string(req.Body), nil
})

// apiBundle serves the API on a local world whose worker runs the runs
// (unless stopped).
type apiBundle struct {
	w      *localworld.World
	client *client.Client
	reg    *workflow.Registry
	srv    *httptest.Server
	h      http.Handler
	logs   *syncBuffer
}

func setupAPI(t *testing.T, worker bool, cfg func(*handler.Config)) *apiBundle {
	t.Helper()
	return setupAPIOn(t, localworld.Config{}, worker, cfg)
}

// setupAPIOn is setupAPI on a local world configured with wc.
func setupAPIOn(t *testing.T, wc localworld.Config, worker bool, cfg func(*handler.Config)) *apiBundle {
	t.Helper()
	w, err := localworld.Open(wc)
	if err != nil {
		t.Fatal(err)
	}
	reg := workflow.NewRegistry()
	if err := reg.Register(apiGreet, apiShout, apiApprove, apiWebhook, apiUnbook, apiBook, apiSaga); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	if worker {
		wk, err := skworker.New(skworker.Config{World: w, Registry: reg}, knobs.WithPollWait(20*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- wk.Run(ctx) }()
	} else {
		done <- nil
	}
	logs := &syncBuffer{}
	hc := handler.Config{Worker: skworker.Config{World: w, Registry: reg, Logger: lambdaio.NewJSONLogger(logs, slogDebug)}}
	if cfg != nil {
		cfg(&hc)
	}
	h, err := handler.NewAPIServer(hc)
	if err != nil {
		t.Fatal(err)
	}
	// Every response the tests get is checked against the OpenAPI document.
	srv := httptest.NewServer(newConformance(t, h))
	t.Cleanup(func() { srv.Close(); cancel(); <-done; _ = w.Close() })
	client, err := client.New(client.Config{World: w, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return &apiBundle{w: w, client: client, reg: reg, srv: srv, h: h, logs: logs}
}

// apiResponse is a response with its body decoded as JSON.
type apiResponse struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (b *apiBundle) do(t *testing.T, method, path, body string, header ...string) apiResponse {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := apiResponse{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.body); err != nil {
			t.Fatalf("%s %s: body %q is not a JSON object: %v", method, path, raw, err)
		}
	}
	return out
}

// problem checks that r is a problem+json response with status and code.
func (r apiResponse) problem(t *testing.T, status int, code string) {
	t.Helper()
	if r.status != status || r.header.Get("Content-Type") != "application/problem+json" || r.body["code"] != code ||
		r.body["status"] != float64(status) || r.body["type"] == "" || r.body["title"] == "" {
		t.Fatalf("got %d %s %s, want a %d problem %s", r.status, r.header.Get("Content-Type"), r.raw, status, code)
	}
}

func (b *apiBundle) runs(t *testing.T) int {
	t.Helper()
	p, err := b.client.ListRuns(context.Background(), client.ListRunsOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(p.Runs)
}

// waitStatus polls GET /v1/runs/{id} until the run has status.
func (b *apiBundle) waitStatus(t *testing.T, id, status string) apiResponse {
	t.Helper()
	for limit := time.Now().Add(time.Minute); ; { // a bound against a hang, not a timing judgement
		r := b.do(t, http.MethodGet, "/v1/runs/"+id, "")
		if r.status != http.StatusOK {
			t.Fatalf("GET run: %d %s", r.status, r.raw)
		}
		if r.body["status"] == status {
			return r
		}
		if time.Now().After(limit) {
			t.Fatalf("run %s is %v, want %s", id, r.body["status"], status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitHook waits until a hook holds token.
func (b *apiBundle) waitHook(t *testing.T, runID string) *world.Hook {
	t.Helper()
	for limit := time.Now().Add(time.Minute); ; { // a bound against a hang, not a timing judgement
		p, err := b.w.ListHooks(context.Background(), &world.ListHooksParams{RunID: runID})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > 0 {
			return &p.Items[0]
		}
		if time.Now().After(limit) {
			t.Fatal("the run created no hook")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
