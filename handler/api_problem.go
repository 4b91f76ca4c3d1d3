package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/sealmark"
	"github.com/skeinflow/skein/world"
)

// problemMediaType is RFC 9457's media type for problem details.
const problemMediaType = "application/problem+json"

// problem is an RFC 9457 problem details object, with the API's extension
// members: Code, a stable machine-readable name of the problem, and the
// workflow or run it is about.
type problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Code     string `json:"code"`
	Workflow string `json:"workflow,omitempty"`
	RunID    string `json:"runId,omitempty"`
	// ErrorCode is a failed run's error code (USER_ERROR, ...).
	ErrorCode string `json:"errorCode,omitempty"`
}

// problemType is the URI that identifies a kind of problem. The URIs are
// names (URNs), not pages to fetch.
func problemType(name string) string { return "urn:skein:problem:" + name }

func badRequest(code, detail string) *problem {
	return &problem{Type: problemType("invalid-request"), Title: "Bad Request", Status: http.StatusBadRequest, Code: code, Detail: detail}
}

// sentinelProblems maps the world's sentinel errors (in world.Status's
// order) to problems.
var sentinelProblems = []struct {
	err         error
	typ, code   string
	status      int
	title       string
	showsDetail bool
}{
	{world.ErrNotFound, "not-found", "NOT_FOUND", http.StatusNotFound, "Not Found", true},
	{world.ErrConflict, "conflict", "CONFLICT", http.StatusConflict, "Conflict", true},
	{world.ErrLeaseHeld, "conflict", "CONFLICT", http.StatusConflict, "Conflict", true},
	{world.ErrGone, "gone", "GONE", http.StatusGone, "Gone", true},
	{world.ErrTooEarly, "too-early", "TOO_EARLY", http.StatusTooEarly, "Too Early", true},
	{world.ErrInvalid, "invalid-request", "INVALID_REQUEST", http.StatusBadRequest, "Bad Request", true},
	{world.ErrLimitExceeded, "limit-exceeded", world.CodeLimitExceeded, http.StatusRequestEntityTooLarge, "Content Too Large", true},
}

// problemFor maps an error of the Client or the World to a problem: the
// workflow package's typed errors first, then the world's sentinels (with
// world.Status's codes), then the context's; anything else is a 500 whose
// detail says nothing of the cause (which is logged).
func problemFor(err error) *problem {
	var req *client.RequestError
	var limit *world.LimitError
	if errors.As(err, &limit) {
		return &problem{Type: problemType("limit-exceeded"), Title: "Content Too Large", Status: http.StatusRequestEntityTooLarge,
			Code: limit.Code(), RunID: limit.RunID, Detail: limitDetail(limit)}
	}
	if errors.As(err, &req) {
		if p := requestProblem(req); p != nil {
			return p
		}
	}
	for _, s := range sentinelProblems {
		if errors.Is(err, s.err) {
			return &problem{Type: problemType(s.typ), Title: s.title, Status: s.status, Code: s.code, Detail: err.Error()}
		}
	}
	if runID, keyID, ok := sealmark.KeyOf(err); ok {
		return &problem{Type: problemType("key-unavailable"), Title: "Internal Server Error", Status: http.StatusInternalServerError, Code: "KEY_UNAVAILABLE",
			RunID: runID, Detail: fmt.Sprintf("the run's payloads are encrypted with key %q, which this function cannot use", keyID)}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &problem{Type: problemType("timeout"), Title: "Gateway Timeout", Status: http.StatusGatewayTimeout, Code: "TIMEOUT",
			Detail: "the request did not finish in the function's time"}
	}
	return &problem{Type: problemType("internal"), Title: "Internal Server Error", Status: http.StatusInternalServerError, Code: "INTERNAL",
		Detail: "the request failed; the function's log has the cause"}
}

// limitDetail says which of a run's limits a request would pass.
func limitDetail(e *world.LimitError) string {
	if e.Limit == "events" {
		return fmt.Sprintf("the run has reached its limit of %d events: it takes no more (nothing recorded)", e.Max)
	}
	return fmt.Sprintf("the %s limit is %d bytes; this request's is %d (nothing recorded)", e.Limit, e.Max, e.Size)
}

// requestProblem maps a refused request to its problem, or nil for a kind
// the sentinels below map.
func requestProblem(req *client.RequestError) *problem {
	switch req.Kind {
	case world.ErrConflict:
		// A conflict like the world's (CONFLICT), naming the key's run.
		return &problem{Type: problemType("conflict"), Title: "Conflict", Status: http.StatusConflict, Code: "CONFLICT",
			Workflow: req.Workflow, RunID: req.RunID, Detail: idemDetail(req)}
	case client.ErrUnknownWorkflow:
		return &problem{Type: problemType("unknown-workflow"), Title: "Not Found", Status: http.StatusNotFound, Code: "UNKNOWN_WORKFLOW",
			Workflow: req.Workflow, Detail: fmt.Sprintf("workflow %q is not registered with this function's registry (no run created)", req.Workflow)}
	case world.ErrInvalid:
		return &problem{Type: problemType("invalid-input"), Title: "Bad Request", Status: http.StatusBadRequest, Code: "INVALID_INPUT",
			Workflow: req.Workflow, Detail: fmt.Sprintf("the input does not decode into workflow %q's input type: %v (no run created)", req.Workflow, req.Err)}
	case world.ErrNotFound:
		// The token is the caller's secret: not echoed.
		return &problem{Type: problemType("hook-not-found"), Title: "Not Found", Status: http.StatusNotFound, Code: "HOOK_NOT_FOUND",
			Detail: "no active hook holds this token (unknown, disposed, or its run has ended)"}
	}
	return nil
}

// idemDetail says why a start's idempotency key was refused. The key is
// the caller's own, echoed back.
func idemDetail(e *client.RequestError) string {
	if e.InputDiffers {
		return fmt.Sprintf("idempotency key %q already started run %s of workflow %q with another input; "+
			"a key names one start: use another key for another input (no run created)", e.Key, e.RunID, e.Workflow)
	}
	return fmt.Sprintf("idempotency key %q already started run %s of workflow %q, not %q (no run created)", e.Key, e.RunID, e.Workflow, e.Requested)
}

// writeProblem writes p as application/problem+json.
func writeProblem(w http.ResponseWriter, p *problem) {
	b, err := json.Marshal(p)
	if err != nil {
		b = []byte(`{"type":"about:blank","title":"Internal Server Error","status":500,"code":"INTERNAL"}`)
		p.Status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", problemMediaType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(b, '\n'))
}

// maxResponseBody bounds an answer's body: a Lambda Function URL returns
// at most 6 MB, headers and encoding included, and answers a larger
// response with an error of its own instead of the function's.
const maxResponseBody = 5 << 20

// writeJSON writes v as application/json with status, or, when it would be
// larger than maxResponseBody, a 413 problem (RESPONSE_TOO_LARGE).
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeProblem(w, problemFor(err))
		return
	}
	if len(b) > maxResponseBody {
		writeProblem(w, &problem{Type: problemType("response-too-large"), Title: "Content Too Large", Status: http.StatusRequestEntityTooLarge,
			Code: "RESPONSE_TOO_LARGE", Detail: fmt.Sprintf("the answer would be %d bytes, more than the %d this API returns "+
				"(a Lambda Function URL returns at most 6 MB): read the run's input and output with the Go client (client.Client.GetRun) "+
				"or the CLI (skein runs show), which read them from the World", len(b), maxResponseBody)})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
