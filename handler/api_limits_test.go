package handler_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// A query parameter a route does not take is refused, as an unknown body
// member is: ?idempotencyKey= on a start used to be ignored, and two
// starts made two runs.
func TestAPIUnknownQueryParameter(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, false, nil)
	for range 2 {
		r := b.do(t, http.MethodPost, "/v1/workflows/api-greet/runs?idempotencyKey=k1", `{"input":{"name":"a"}}`)
		r.problem(t, http.StatusBadRequest, "INVALID_QUERY")
		if !strings.Contains(r.body["detail"].(string), `"idempotencyKey"`) {
			t.Fatalf("detail %q does not name the parameter", r.body["detail"])
		}
	}
	if n := b.runs(t); n != 0 {
		t.Fatalf("%d runs created", n)
	}
	b.do(t, http.MethodGet, "/v1/runs?limit=5&statuss=failed", "").problem(t, http.StatusBadRequest, "INVALID_QUERY")
	b.do(t, http.MethodGet, "/v1/runs/wrun_x?verbose=1", "").problem(t, http.StatusBadRequest, "INVALID_QUERY")
	if r := b.do(t, http.MethodGet, "/v1/runs?limit=5&status=failed", ""); r.status != http.StatusOK {
		t.Fatalf("known parameters: %d %s", r.status, r.raw)
	}
}

// An input with a member its workflow's type does not have (a misspelled
// field), or no input for a workflow that takes a struct, is refused before
// a run is created.
func TestAPIStartInputRefusedUpFront(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, false, nil)
	for _, body := range []string{`{"input":{"name":"a","tims":2}}`, `{}`, `{"input":null}`, ``} {
		r := b.do(t, http.MethodPost, "/v1/workflows/api-greet/runs", body)
		r.problem(t, http.StatusBadRequest, "INVALID_INPUT")
	}
	if n := b.runs(t); n != 0 {
		t.Fatalf("%d runs created", n)
	}
	if r := b.do(t, http.MethodPost, "/v1/workflows/api-greet/runs", `{"input":{}}`); r.status != http.StatusCreated {
		t.Fatalf("{} as input (the type's zero value): %d %s", r.status, r.raw)
	}
}

// Cancelling a run that has ended is a conflict told in the API's words.
func TestAPICancelEndedRun(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, true, nil)
	r := b.do(t, http.MethodPost, "/v1/workflows/api-greet/runs", `{"input":{"name":"a","times":1}}`)
	id := r.body["id"].(string)
	b.waitStatus(t, id, "completed")
	r = b.do(t, http.MethodPost, "/v1/runs/"+id+"/cancel", "")
	r.problem(t, http.StatusConflict, "CONFLICT")
	detail := r.body["detail"].(string)
	if !strings.Contains(detail, "has already ended (completed)") || strings.Contains(detail, "world:") || strings.Contains(detail, "run_cancelled") {
		t.Fatalf("detail %q: want the API's words, not the World's", detail)
	}
}

// seedCompleted records a completed run with output straight in the World.
func seedCompleted(t *testing.T, w world.World, output json.RawMessage) string {
	t.Helper()
	id := world.NewIDSource(nil, nil).New(world.PrefixRun)
	_, err := w.Append(context.Background(), &world.AppendParams{RunID: id, Events: []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "api-greet", Input: json.RawMessage(`{"name":"a"}`)}},
		{Data: &world.RunStarted{}},
		{Data: &world.RunCompleted{Output: output}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// An answer larger than a Function URL returns is a 413 problem, not a
// body Lambda would replace with an error of its own.
func TestAPIResponseTooLarge(t *testing.T) {
	t.Parallel()
	b := setupAPIOn(t, localworld.Config{Limits: world.Limits{MaxPayload: 8 << 20}}, false, nil)
	big := seedCompleted(t, b.w, json.RawMessage(`"`+strings.Repeat("x", 6<<20)+`"`))
	b.do(t, http.MethodGet, "/v1/runs/"+big+"/result", "").problem(t, http.StatusRequestEntityTooLarge, "RESPONSE_TOO_LARGE")
	b.do(t, http.MethodGet, "/v1/runs/"+big, "").problem(t, http.StatusRequestEntityTooLarge, "RESPONSE_TOO_LARGE")
	small := seedCompleted(t, b.w, json.RawMessage(`"ok"`))
	if r := b.do(t, http.MethodGet, "/v1/runs/"+small+"/result", ""); r.status != http.StatusOK {
		t.Fatalf("small result: %d %s", r.status, r.raw)
	}
}

// A hook payload over the run's payload limit is refused with a 413
// problem naming the limit, and nothing is recorded.
func TestAPIResumePayloadOverLimit(t *testing.T) {
	t.Parallel()
	b := setupAPIOn(t, localworld.Config{Limits: world.Limits{MaxPayload: 4 << 10}}, true, nil)
	r := b.do(t, http.MethodPost, "/v1/workflows/api-approve/runs", `{"input":"tok-limit"}`)
	id := r.body["id"].(string)
	b.waitHook(t, id)
	run, err := b.w.GetRun(context.Background(), &world.GetRunParams{RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	r = b.do(t, http.MethodPost, "/v1/hooks/resume", `{"token":"tok-limit","payload":{"ok":true,"by":"`+strings.Repeat("b", 5<<10)+`"}}`)
	r.problem(t, http.StatusRequestEntityTooLarge, world.CodeLimitExceeded)
	after, err := b.w.GetRun(context.Background(), &world.GetRunParams{RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	if after.LastSeq != run.LastSeq {
		t.Fatalf("the refused payload was recorded: LastSeq %d, was %d", after.LastSeq, run.LastSeq)
	}
	b.do(t, http.MethodPost, "/v1/hooks/resume", `{"token":"tok-limit","payload":{"ok":true,"by":"me"}}`)
	b.waitStatus(t, id, "completed")
}
