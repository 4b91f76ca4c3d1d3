package handler_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/skeinflow/skein/worker"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	apidoc "github.com/skeinflow/skein/docs/api"
	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/internal/lambdaio"
	"github.com/skeinflow/skein/world"
)

// A start, its result, status and streams, through every success route.
func TestAPIStartResultStreams(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, true, nil)
	r := b.do(t, http.MethodPost, "/v1/workflows/api-greet/runs", `{"input":{"name":"ada","times":2},"attributes":{"team":"x"}}`)
	if r.status != http.StatusCreated || r.body["workflow"] != "api-greet" || r.header.Get("Location") != "/v1/runs/"+r.body["id"].(string) {
		t.Fatalf("start: %d %s (Location %q)", r.status, r.raw, r.header.Get("Location"))
	}
	id := r.body["id"].(string)
	done := b.waitStatus(t, id, "completed")
	if done.body["output"] != "hello, ada" || done.body["durationMs"] == nil || done.body["completedAt"] == nil ||
		done.body["input"].(map[string]any)["name"] != "ada" || done.body["attributes"].(map[string]any)["team"] != "x" {
		t.Errorf("run: %s", done.raw)
	}
	if r := b.do(t, http.MethodGet, "/v1/runs/"+id+"/result", ""); r.status != http.StatusOK || r.body["output"] != "hello, ada" {
		t.Errorf("result: %d %s", r.status, r.raw)
	}

	// The default stream: text chunks, a JSON one, bytes; paged.
	r = b.do(t, http.MethodGet, "/v1/runs/"+id+"/stream?limit=2", "")
	if r.status != http.StatusOK || r.raw != `{"chunks":[{"index":0,"type":"text","text":"hello 0"},{"index":1,"type":"text","text":"hello 1"}],"next":2,"done":false}`+"\n" {
		t.Errorf("stream page 1: %d %s", r.status, r.raw)
	}
	r = b.do(t, http.MethodGet, "/v1/runs/"+id+"/stream?start=2", "")
	if r.status != http.StatusOK || r.raw != `{"chunks":[{"index":2,"type":"json","value":{"to":"ada"}},{"index":3,"type":"bytes","base64":"//4="}],"next":4,"done":true}`+"\n" {
		t.Errorf("stream page 2: %d %s", r.status, r.raw)
	}
	// A named stream, its name escaped in the path; the list.
	if r := b.do(t, http.MethodGet, "/v1/runs/"+id+"/streams/log%2Fa?start=-1", ""); r.status != http.StatusOK ||
		!strings.Contains(r.raw, `"text":"named"`) || r.body["done"] != true {
		t.Errorf("named stream: %d %s", r.status, r.raw)
	}
	if r := b.do(t, http.MethodGet, "/v1/runs/"+id+"/streams", ""); r.status != http.StatusOK ||
		r.raw != `{"streams":[{"name":"","tailIndex":3,"done":true},{"name":"log/a","tailIndex":0,"done":true}]}`+"\n" {
		t.Errorf("streams: %d %s", r.status, r.raw)
	}
	// The list, filtered and paged.
	if r := b.do(t, http.MethodGet, "/v1/runs?workflow=api-greet&status=completed&limit=1", ""); r.status != http.StatusOK ||
		len(r.body["runs"].([]any)) != 1 || r.body["hasMore"] != false {
		t.Errorf("list: %d %s", r.status, r.raw)
	}
	// Cancelling a completed run is a conflict.
	b.do(t, http.MethodPost, "/v1/runs/"+id+"/cancel", "").problem(t, http.StatusConflict, "CONFLICT")
}

// The same idempotency key, as a header or in the body, returns the same
// run: 201 the first time, 200 after; one run in all.
func TestAPIIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, false, nil)
	path := "/v1/workflows/api-greet/runs"
	first := b.do(t, http.MethodPost, path, `{"input":{"name":"ada"}}`, "Idempotency-Key", "order-1")
	again := b.do(t, http.MethodPost, path, `{"input":{"name":"ada"},"idempotencyKey":"order-1"}`)
	if first.status != http.StatusCreated || again.status != http.StatusOK || first.body["id"] != again.body["id"] ||
		again.body["idempotencyKey"] != "order-1" {
		t.Fatalf("first %d %s, again %d %s", first.status, first.raw, again.status, again.raw)
	}
	b.do(t, http.MethodPost, path, `{"idempotencyKey":"a"}`, "Idempotency-Key", "b").problem(t, http.StatusBadRequest, "IDEMPOTENCY_KEY_MISMATCH")
	// The key of another workflow's run.
	b.do(t, http.MethodPost, "/v1/workflows/api-approve/runs", `{"input":"tok"}`, "Idempotency-Key", "order-1").
		problem(t, http.StatusConflict, "CONFLICT")
	if n := b.runs(t); n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}
}

// The same idempotency key with another input is a 409 conflict naming the
// key's run, not that run with the new input dropped; the same input
// written otherwise (spacing, member order) is the same start.
func TestAPIIdempotencyKeyInput(t *testing.T) {
	t.Parallel()
	path := "/v1/workflows/api-greet/runs"
	for _, tc := range []struct {
		name, second string
		conflict     bool
	}{
		{"the same input", `{"input":{"name":"ada"}}`, false},
		{"the same input written otherwise", `{ "input" : { "name" : "ada" } }`, false},
		{"another input", `{"input":{"name":"bob"}}`, true},
		{"a member more", `{"input":{"name":"ada","times":2}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupAPI(t, false, nil)
			first := b.do(t, http.MethodPost, path, `{"input":{"name":"ada"}}`, "Idempotency-Key", "order-1")
			if first.status != http.StatusCreated || first.body["runId"] != first.body["id"] {
				t.Fatalf("first %d %s, want 201 naming the run in id and runId", first.status, first.raw)
			}
			again := b.do(t, http.MethodPost, path, tc.second, "Idempotency-Key", "order-1")
			if !tc.conflict {
				if again.status != http.StatusOK || again.body["id"] != first.body["id"] {
					t.Fatalf("again %d %s, want 200 with run %v", again.status, again.raw, first.body["id"])
				}
				return
			}
			again.problem(t, http.StatusConflict, "CONFLICT")
			if again.body["runId"] != first.body["id"] || again.body["workflow"] != "api-greet" ||
				!strings.Contains(again.body["detail"].(string), "another input") {
				t.Errorf("conflict %s, want one naming run %v and saying the input differs", again.raw, first.body["id"])
			}
			if n := b.runs(t); n != 1 {
				t.Fatalf("%d runs, want 1", n)
			}
		})
	}
}

// Bad input is refused and creates no run; every error is a problem with
// the status of its cause.
func TestAPIBadInputCreatesNoRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, method, path, body string
		header                   []string
		status                   int
		code, says               string
	}{
		{"unknown workflow", "POST", "/v1/workflows/nope/runs", `{"input":{}}`, nil, 404, "UNKNOWN_WORKFLOW", `"nope"`},
		{"input of the wrong type", "POST", "/v1/workflows/api-greet/runs", `{"input":{"name":5}}`, nil, 400, "INVALID_INPUT", "Greeting.name"},
		{"input not an object", "POST", "/v1/workflows/api-greet/runs", `{"input":[1]}`, nil, 400, "INVALID_INPUT", "api-greet"},
		{"unknown member", "POST", "/v1/workflows/api-greet/runs", `{"inptu":{}}`, nil, 400, "INVALID_BODY", "inptu"},
		{"not JSON", "POST", "/v1/workflows/api-greet/runs", `{"input":`, nil, 400, "INVALID_BODY", ""},
		{"trailing data", "POST", "/v1/workflows/api-greet/runs", `{} {}`, nil, 400, "INVALID_BODY", "after"},
		{"not a JSON media type", "POST", "/v1/workflows/api-greet/runs", `{}`, []string{"Content-Type", "text/plain"}, 415, "UNSUPPORTED_MEDIA_TYPE", "text/plain"},
		{"a +json media type", "POST", "/v1/workflows/api-greet/runs", `{"input":{"name":"ada","times":1}}`, []string{"Content-Type", "application/vnd.x+json"}, 415, "UNSUPPORTED_MEDIA_TYPE", "application/vnd.x+json"},
		{"no Content-Type", "POST", "/v1/workflows/api-greet/runs", `{"input":{"name":"ada","times":1}}`, []string{"Content-Type", ""}, 415, "UNSUPPORTED_MEDIA_TYPE", "no Content-Type"},
		{"a member named in capitals", "POST", "/v1/workflows/api-greet/runs", `{"INPUT":{"name":"ada","times":1}}`, nil, 400, "INVALID_BODY", `"INPUT"`},
		{"a member named in another case", "POST", "/v1/workflows/api-greet/runs", `{"input":{"name":"ada","times":1},"IdempotencyKey":"k"}`, nil, 400, "INVALID_BODY", `"IdempotencyKey"`},
		{"a token in another case", "POST", "/v1/hooks/resume", `{"Token":"secret-tok","payload":{}}`, nil, 400, "INVALID_BODY", `"Token"`},
		{"invalid UTF-8 in a key", "POST", "/v1/workflows/api-greet/runs", "{\"input\":{\"name\":\"ada\",\"times\":1},\"idempotencyKey\":\"k\xff\"}", nil, 400, "INVALID_BODY", "UTF-8"},
		{"invalid UTF-8 in the key header", "POST", "/v1/workflows/api-greet/runs", `{"input":{"name":"ada","times":1}}`, []string{"Idempotency-Key", "k\xff"}, 400, "INVALID_REQUEST", "UTF-8"},
		{"a reserved attribute", "POST", "/v1/workflows/api-greet/runs", `{"input":{"name":"ada","times":1},"attributes":{"skein.schedule":"nightly"}}`, nil, 400, "INVALID_REQUEST", "reserved"},
		{"a lone surrogate in a key", "POST", "/v1/workflows/api-greet/runs", `{"input":{"name":"ada","times":1},"idempotencyKey":"k\ud800"}`, nil, 400, "INVALID_BODY", "surrogate"},
		{"a lone low surrogate in a key", "POST", "/v1/workflows/api-greet/runs", `{"input":{"name":"ada","times":1},"idempotencyKey":"k\udc00x"}`, nil, 400, "INVALID_BODY", "surrogate"},
		{"too large", "POST", "/v1/workflows/api-greet/runs", `{"input":{"name":"` + strings.Repeat("x", 2048) + `"}}`, nil, 413, "BODY_TOO_LARGE", "1024"},
		{"key too long", "POST", "/v1/workflows/api-greet/runs", `{"input":{"name":"a"}}`, []string{"Idempotency-Key", strings.Repeat("k", 513)}, 400, "INVALID_REQUEST", "idempotencyKey"},
		{"no such run", "GET", "/v1/runs/wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV", "", nil, 404, "NOT_FOUND", ""},
		{"no such run's result", "GET", "/v1/runs/wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV/result", "", nil, 404, "NOT_FOUND", ""},
		{"no such run's stream", "GET", "/v1/runs/wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV/stream", "", nil, 404, "NOT_FOUND", ""},
		{"no such run's streams", "GET", "/v1/runs/wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV/streams", "", nil, 404, "NOT_FOUND", ""},
		{"cancel no such run", "POST", "/v1/runs/wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV/cancel", `{"reason":"x"}`, nil, 404, "NOT_FOUND", ""},
		{"no such hook", "POST", "/v1/hooks/resume", `{"token":"secret-tok","payload":{}}`, nil, 404, "HOOK_NOT_FOUND", ""},
		{"no token", "POST", "/v1/hooks/resume", `{"payload":{}}`, nil, 400, "INVALID_BODY", "token"},
		{"no body", "POST", "/v1/hooks/resume", ``, nil, 400, "INVALID_BODY", "empty"},
		{"bad status", "GET", "/v1/runs?status=done", "", nil, 400, "INVALID_QUERY", "done"},
		{"bad limit", "GET", "/v1/runs?limit=0", "", nil, 400, "INVALID_QUERY", "limit"},
		{"bad cursor", "GET", "/v1/runs?cursor=zzz", "", nil, 400, "INVALID_REQUEST", ""},
		{"bad start", "GET", "/v1/runs/x/stream?start=a", "", nil, 400, "INVALID_QUERY", "start"},
		{"no such route", "GET", "/v1/nothing", "", nil, 404, "NO_SUCH_ROUTE", "/v1/nothing"},
		{"no version", "GET", "/runs", "", nil, 404, "NO_SUCH_ROUTE", ""},
		{"trailing slash", "GET", "/v1/runs/", "", nil, 404, "NO_SUCH_ROUTE", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setupAPI(t, false, func(cfg *handler.Config) { cfg.MaxRequestBody = 1024 })
			r := b.do(t, c.method, c.path, c.body, c.header...)
			r.problem(t, c.status, c.code)
			if detail, _ := r.body["detail"].(string); !strings.Contains(detail, c.says) || strings.Contains(detail, "secret-tok") {
				t.Errorf("detail %q does not say %q (or shows the token)", detail, c.says)
			}
			if n := b.runs(t); n != 0 {
				t.Errorf("%d runs created, want none", n)
			}
		})
	}
}

// A method a route does not take is 405 with Allow, and does nothing.
func TestAPIMethodNotAllowed(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, false, nil)
	for path, allow := range map[string]string{
		"/v1/workflows/api-greet/runs": "POST",
		"/v1/runs/wrun_x":              "GET",
		"/v1/runs/wrun_x/cancel":       "POST",
		"/v1/hooks/resume":             "POST",
		"/v1/runs":                     "GET",
	} {
		for _, m := range []string{"GET", "PUT", "DELETE", "PATCH"} {
			if m == allow {
				continue
			}
			r := b.do(t, m, path, "")
			r.problem(t, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
			if r.header.Get("Allow") != allow {
				t.Errorf("%s %s: Allow %q, want %q", m, path, r.header.Get("Allow"), allow)
			}
		}
	}
	if n := b.runs(t); n != 0 {
		t.Errorf("%d runs, want none", n)
	}
}

// A hook is resumed by its token with a JSON payload; a webhook's token is
// refused (its URL delivers it); the run's result follows; a run that has
// not ended has no result yet (425).
func TestAPIResumeHook(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, true, nil)
	r := b.do(t, http.MethodPost, "/v1/workflows/api-approve/runs", `{"input":"approve/7"}`)
	id := r.body["id"].(string)
	b.waitHook(t, id)
	res := b.do(t, http.MethodGet, "/v1/runs/"+id+"/result", "")
	res.problem(t, http.StatusTooEarly, "RUN_NOT_ENDED")
	if res.header.Get("Retry-After") == "" || res.body["runId"] != id {
		t.Errorf("425: %v %s", res.header, res.raw)
	}
	r = b.do(t, http.MethodPost, "/v1/hooks/resume", `{"token":"approve/7","payload":{"ok":true,"by":"dana"}}`)
	if r.status != http.StatusAccepted || r.body["runId"] != id || r.body["hookId"] == "" {
		t.Fatalf("resume: %d %s", r.status, r.raw)
	}
	done := b.waitStatus(t, id, "completed")
	if out, _ := json.Marshal(done.body["output"]); string(out) != `{"by":"dana","ok":true}` {
		t.Errorf("output %s", out)
	}

	r = b.do(t, http.MethodPost, "/v1/workflows/api-webhook/runs", `{}`)
	wh := b.waitHook(t, r.body["id"].(string))
	b.do(t, http.MethodPost, "/v1/hooks/resume", fmt.Sprintf(`{"token":%q,"payload":"x"}`, wh.Token)).problem(t, http.StatusConflict, "WEBHOOK")
}

// Cancel: 200 with the cancelled run, again 200; its result is a 409
// problem; a failed run's result names its error code.
func TestAPICancelAndFailed(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, true, nil)
	r := b.do(t, http.MethodPost, "/v1/workflows/api-approve/runs", `{"input":"t1"}`)
	id := r.body["id"].(string)
	b.waitHook(t, id)
	for range 2 {
		r = b.do(t, http.MethodPost, "/v1/runs/"+id+"/cancel", `{"reason":"no longer needed"}`)
		if r.status != http.StatusOK || r.body["status"] != "cancelled" || r.body["cancelReason"] != "no longer needed" {
			t.Fatalf("cancel: %d %s", r.status, r.raw)
		}
	}
	b.do(t, http.MethodGet, "/v1/runs/"+id+"/result", "").problem(t, http.StatusConflict, "RUN_CANCELLED")

	r = b.do(t, http.MethodPost, "/v1/workflows/api-greet/runs", `{"input":{}}`)
	id = r.body["id"].(string)
	failed := b.waitStatus(t, id, "failed")
	if e, _ := failed.body["error"].(map[string]any); e["code"] != "USER_ERROR" || e["message"] != "no name" {
		t.Errorf("failed run: %s", failed.raw)
	}
	res := b.do(t, http.MethodGet, "/v1/runs/"+id+"/result", "")
	res.problem(t, http.StatusConflict, "RUN_FAILED")
	if res.body["errorCode"] != "USER_ERROR" || !strings.Contains(res.body["detail"].(string), "no name") {
		t.Errorf("result: %s", res.raw)
	}
}

// Cancel with compensate: the run is cancelled, and its completed step is
// compensated after the end; the run's view counts it.
func TestAPICancelCompensating(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, true, nil)
	r := b.do(t, http.MethodPost, "/v1/workflows/api-saga/runs", `{"input":"s1"}`)
	id := r.body["id"].(string)
	b.waitHook(t, id)
	r = b.do(t, http.MethodPost, "/v1/runs/"+id+"/cancel", `{"reason":"changed plans","compensate":true}`)
	if r.status != http.StatusOK || r.body["status"] != "cancelled" {
		t.Fatalf("cancel: %d %s", r.status, r.raw)
	}
	for limit := time.Now().Add(time.Minute); ; { // a bound against a hang, not a timing judgement
		r = b.do(t, http.MethodGet, "/v1/runs/"+id, "")
		c, _ := r.body["compensations"].(map[string]any)
		if c["status"] == "compensated" && r.body["deactivatedAt"] != nil {
			if c["succeeded"] != 1.0 || c["requested"] != true || c["failed"] != 0.0 {
				t.Errorf("compensations: %s", r.raw)
			}
			break
		}
		if time.Now().After(limit) {
			t.Fatalf("run not compensated and at rest: %s", r.raw)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Each request is logged with its route and status; a hook's token, in the
// body, never is.
func TestAPILogs(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, false, nil)
	// Served in the test's goroutine: the line is logged once ServeHTTP returns.
	resume := httptest.NewRequest(http.MethodPost, "/v1/hooks/resume", strings.NewReader(`{"token":"secret-tok"}`))
	resume.Header.Set("Content-Type", "application/json")
	for _, req := range []*http.Request{resume, httptest.NewRequest(http.MethodGet, "/v1/runs/wrun_x", nil)} {
		b.h.ServeHTTP(httptest.NewRecorder(), req)
	}
	var routes []string
	for _, l := range b.logs.lines(t) {
		if l["message"] == "handler: API request" {
			routes = append(routes, fmt.Sprint(l["method"], " ", l["route"], " ", l["status"]))
		}
	}
	if strings.Join(routes, "; ") != "POST /v1/hooks/resume 404; GET /v1/runs/{id} 404" {
		t.Errorf("logged %q", routes)
	}
	if strings.Contains(fmt.Sprint(b.logs.lines(t)), "secret-tok") {
		t.Error("the log shows the token")
	}
}

// NewAPI refuses a config without a Registry (it names what can start).
func TestNewAPIRefuses(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, false, nil)
	if _, err := handler.NewAPIServer(handler.Config{Worker: worker.Config{World: b.w}}); err == nil || !strings.Contains(err.Error(), "Registry") {
		t.Errorf("no registry: %v", err)
	}
	if _, err := handler.NewAPI(handler.Config{Worker: worker.Config{World: b.w, Registry: nil}}); err == nil {
		t.Error("NewAPI without a registry")
	}
}

// NewAPI serves the same API to Function URL events: a base64 body is
// decoded, the response's headers carried, and the caller Lambda
// authenticated (the IAM authorizer's ARN) logged.
func TestNewAPIFunctionURLEvent(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, false, nil)
	logs := &syncBuffer{}
	fn, err := handler.NewAPI(handler.Config{Worker: worker.Config{World: b.w, Registry: b.reg, Logger: lambdaio.NewJSONLogger(logs, slogDebug)}})
	if err != nil {
		t.Fatal(err)
	}
	path := "/v1/workflows/api-greet/runs"
	req := events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: path, IsBase64Encoded: true,
		Body:    base64.StdEncoding.EncodeToString([]byte(`{"input":{"name":"ada"}}`)),
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": "k"},
		RequestContext: events.LambdaFunctionURLRequestContext{
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: http.MethodPost, Path: path},
			Authorizer: &events.LambdaFunctionURLRequestContextAuthorizerDescription{
				IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::000000000000:user/ci"},
			},
		},
	}
	ctx, cancel := lambdaCtx(t, "req-1", 10*time.Second)
	defer cancel()
	for i, want := range []int{http.StatusCreated, http.StatusOK} {
		resp, err := fn(ctx, req)
		if err != nil || resp.StatusCode != want || resp.Headers["Content-Type"] != "application/json" ||
			!strings.HasPrefix(resp.Headers["Location"], "/v1/runs/wrun_") {
			t.Fatalf("call %d: %+v, %v", i, resp, err)
		}
	}
	var logged bool
	for _, l := range logs.lines(t) {
		if l["message"] == "handler: API request" && l["caller"] == "arn:aws:iam::000000000000:user/ci" && l["requestId"] == "req-1" {
			logged = true
		}
	}
	if !logged {
		t.Errorf("no request line with the caller and request ID: %v", logs.lines(t))
	}
	if n := b.runs(t); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}

// The API serves its OpenAPI document.
func TestAPIServesItsDocument(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, false, nil)
	resp, err := b.srv.Client().Get(b.srv.URL + "/v1/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/yaml" ||
		!bytes.Equal(body, apidoc.OpenAPI()) {
		t.Errorf("%d %s (%d bytes), %v", resp.StatusCode, resp.Header.Get("Content-Type"), len(body), err)
	}
}

// expiredWorld is a World whose runs' claim-checked parts have expired.
type expiredWorld struct{ world.World }

func (e expiredWorld) GetRun(ctx context.Context, p *world.GetRunParams) (*world.Run, error) {
	return nil, &world.RefusalError{Kind: world.ErrGone, Entity: p.RunID, Reason: "output has expired"}
}

// A run whose parts have expired is 410 Gone.
func TestAPIGone(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, false, func(c *handler.Config) { c.Worker.World = expiredWorld{c.Worker.World} })
	for _, path := range []string{"/v1/runs/wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV", "/v1/runs/wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV/result"} {
		r := b.do(t, http.MethodGet, path, "")
		r.problem(t, http.StatusGone, "GONE")
		if !strings.Contains(r.body["detail"].(string), "output has expired") {
			t.Errorf("%s: %s", path, r.raw)
		}
	}
}
