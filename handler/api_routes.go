package handler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/skeinflow/skein/client"
	apidoc "github.com/skeinflow/skein/docs/api"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// Limits of the API's queries.
const (
	defaultListLimit = 50
	maxListLimit     = 1000
	defaultReadLimit = 100
	maxReadLimit     = 1000
)

// table lists the API's routes, each with the query parameters it takes
// (any other is answered 400, as an unknown body member is). Paths that
// match a route but not its method are answered 405 with Allow.
func (a *api) table() []route {
	p := APIPrefix
	return []route{
		newRoute(http.MethodPost, p+"/workflows/{name}/runs", a.start),
		newRoute(http.MethodGet, p+"/runs", a.list, "limit", "status", "workflow", "cursor"),
		newRoute(http.MethodGet, p+"/runs/{id}", a.get),
		newRoute(http.MethodGet, p+"/runs/{id}/result", a.result),
		newRoute(http.MethodPost, p+"/runs/{id}/cancel", a.cancel),
		newRoute(http.MethodGet, p+"/runs/{id}/streams", a.streams),
		newRoute(http.MethodGet, p+"/runs/{id}/stream", a.readStream, "limit", "start"),
		newRoute(http.MethodGet, p+"/runs/{id}/streams/{name}", a.readStream, "limit", "start"),
		newRoute(http.MethodPost, p+"/hooks/resume", a.resume),
		newRoute(http.MethodGet, p+"/openapi.yaml", a.openAPI),
	}
}

// openAPI: GET /v1/openapi.yaml, the API's own description.
func (a *api) openAPI(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(apidoc.OpenAPI())
}

// fail writes the problem err stands for, logging the errors that are the
// server's.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	p := problemFor(err)
	if p.Status >= 500 {
		a.log.ErrorContext(r.Context(), "handler: API request failed", "method", r.Method, "path", r.URL.Path, "err", err.Error())
	}
	writeProblem(w, p)
}

// decode reads a JSON body into dst: at most MaxRequestBody bytes (413),
// of the media type application/json, which a body must name (415), valid
// UTF-8 without lone surrogate escapes (400: JSON decoding would turn them
// into U+FFFD, and distinct idempotency keys or tokens into one), one
// object whose members dst names exactly, case included (400). An empty
// body leaves dst alone when optional.
func (a *api) decode(w http.ResponseWriter, r *http.Request, dst any, optional bool) bool {
	ct := r.Header.Get("Content-Type")
	if ct != "" && !isJSONMediaType(ct) {
		writeProblem(w, unsupportedMediaType(fmt.Sprintf("Content-Type %q: the API takes application/json", ct)))
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.cfg.MaxRequestBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeProblem(w, &problem{Type: problemType("body-too-large"), Title: "Content Too Large", Status: http.StatusRequestEntityTooLarge,
			Code: "BODY_TOO_LARGE", Detail: fmt.Sprintf("the body exceeds %d bytes", a.cfg.MaxRequestBody)})
		return false
	case err != nil:
		writeProblem(w, badRequest("INVALID_BODY", "reading the body: "+err.Error()))
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return true
		}
		writeProblem(w, badRequest("INVALID_BODY", "the body is empty: a JSON object is required"))
		return false
	}
	if ct == "" {
		writeProblem(w, unsupportedMediaType("the request has a body but no Content-Type: the API takes application/json"))
		return false
	}
	if why := checkJSONText(body); why != "" {
		writeProblem(w, badRequest("INVALID_BODY", why))
		return false
	}
	if name := unknownMember(body, dst); name != "" {
		writeProblem(w, badRequest("INVALID_BODY", fmt.Sprintf("the body is not the JSON object this route takes: unknown member %q (member names are case-sensitive)", name)))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		writeProblem(w, badRequest("INVALID_BODY", "the body is not the JSON object this route takes: "+err.Error()))
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		writeProblem(w, badRequest("INVALID_BODY", "the body has data after its JSON object"))
		return false
	}
	return true
}

// start: POST /v1/workflows/{name}/runs.
func (a *api) start(w http.ResponseWriter, r *http.Request, params map[string]string) {
	var req startRequest
	if !a.decode(w, r, &req, true) {
		return
	}
	key := r.Header.Get("Idempotency-Key")
	switch {
	case key != "" && req.IdempotencyKey != "" && key != req.IdempotencyKey:
		writeProblem(w, badRequest("IDEMPOTENCY_KEY_MISMATCH", "the Idempotency-Key header and the body's idempotencyKey differ"))
		return
	case key == "":
		key = req.IdempotencyKey
	}
	opts := []client.StartOption{client.StrictInput()}
	if key != "" {
		opts = append(opts, client.WithIdempotencyKey(key))
	}
	if len(req.Attributes) > 0 {
		opts = append(opts, client.WithAttributes(req.Attributes))
	}
	input := req.Input
	if bytes.Equal(bytes.TrimSpace(input), []byte("null")) {
		input = nil
	}
	started, err := sdk.StartJSON(r.Context(), a.client, params["name"], input, opts...)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	info, err := a.client.GetRun(r.Context(), started.ID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	status := http.StatusCreated
	if started.Existed {
		status = http.StatusOK
	}
	w.Header().Set("Location", APIPrefix+"/runs/"+url.PathEscape(started.ID))
	writeJSON(w, status, toAPIRun(info, true))
}

// list: GET /v1/runs.
func (a *api) list(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	q := r.URL.Query()
	limit, ok := intParam(w, q, "limit", defaultListLimit, 1, maxListLimit)
	if !ok {
		return
	}
	status := world.RunStatus(q.Get("status"))
	if status != "" && !status.Valid() {
		writeProblem(w, badRequest("INVALID_QUERY", fmt.Sprintf("status %q: want pending, running, held, completed, failed or cancelled", status)))
		return
	}
	page, err := a.client.ListRuns(r.Context(), client.ListRunsOptions{
		WorkflowName: q.Get("workflow"), Status: status, Limit: limit, Cursor: q.Get("cursor"),
	})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := runList{Runs: make([]*apiRun, len(page.Runs)), HasMore: page.HasMore}
	if page.HasMore {
		out.NextCursor = page.Cursor
	}
	for i, run := range page.Runs {
		out.Runs[i] = toAPIRun(run, false)
	}
	writeJSON(w, http.StatusOK, out)
}

// get: GET /v1/runs/{id}.
func (a *api) get(w http.ResponseWriter, r *http.Request, params map[string]string) {
	info, err := a.client.GetRun(r.Context(), params["id"])
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toAPIRun(info, true))
}

// result: GET /v1/runs/{id}/result.
func (a *api) result(w http.ResponseWriter, r *http.Request, params map[string]string) {
	info, err := a.client.GetRun(r.Context(), params["id"])
	if err != nil {
		a.fail(w, r, err)
		return
	}
	switch info.Status {
	case world.RunStatusCompleted:
		out := info.Output
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		writeJSON(w, http.StatusOK, resultResponse{Output: out})
	case world.RunStatusFailed:
		p := &problem{Type: problemType("run-failed"), Title: "Conflict", Status: http.StatusConflict, Code: "RUN_FAILED",
			RunID: info.ID, ErrorCode: info.ErrorCode, Detail: fmt.Sprintf("run %s failed (%s)", info.ID, info.ErrorCode)}
		if info.Err != nil {
			p.Detail += ": " + info.Err.Error()
		}
		writeProblem(w, p)
	case world.RunStatusCancelled:
		writeProblem(w, &problem{Type: problemType("run-cancelled"), Title: "Conflict", Status: http.StatusConflict, Code: "RUN_CANCELLED",
			RunID: info.ID, Detail: fmt.Sprintf("run %s was cancelled: %s", info.ID, info.CancelReason)})
	default:
		w.Header().Set("Retry-After", "1")
		writeProblem(w, &problem{Type: problemType("run-not-ended"), Title: "Too Early", Status: http.StatusTooEarly, Code: "RUN_NOT_ENDED",
			RunID: info.ID, Detail: fmt.Sprintf("run %s is %s: it has no result yet", info.ID, info.Status)})
	}
}

// cancel: POST /v1/runs/{id}/cancel.
func (a *api) cancel(w http.ResponseWriter, r *http.Request, params map[string]string) {
	var req cancelRequest
	if !a.decode(w, r, &req, true) {
		return
	}
	id := params["id"]
	var opts []client.CancelOption
	if req.Compensate {
		opts = append(opts, client.CancelCompensating())
	}
	if err := a.client.Cancel(r.Context(), id, req.Reason, opts...); err != nil {
		if errors.Is(err, world.ErrConflict) {
			if info, gerr := a.client.GetRun(r.Context(), id); gerr == nil && info.Status.Terminal() {
				writeProblem(w, &problem{Type: problemType("conflict"), Title: "Conflict", Status: http.StatusConflict, Code: "CONFLICT",
					RunID: id, Detail: fmt.Sprintf("run %s has already ended (%s): there is nothing to cancel", id, info.Status)})
				return
			}
		}
		a.fail(w, r, err)
		return
	}
	info, err := a.client.GetRun(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toAPIRun(info, false))
}

// streams: GET /v1/runs/{id}/streams.
func (a *api) streams(w http.ResponseWriter, r *http.Request, params map[string]string) {
	id := params["id"]
	if _, err := a.cfg.Worker.World.GetRun(r.Context(), &world.GetRunParams{RunID: id}); err != nil {
		a.fail(w, r, err)
		return
	}
	names, err := a.client.ListStreams(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := streamList{Streams: make([]apiStream, 0, len(names))}
	for _, n := range names {
		info, err := a.client.StreamInfo(r.Context(), id, n)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		out.Streams = append(out.Streams, apiStream{Name: n, TailIndex: info.TailIndex, Done: info.Done})
	}
	writeJSON(w, http.StatusOK, out)
}

// readStream: GET /v1/runs/{id}/stream and /v1/runs/{id}/streams/{name}.
func (a *api) readStream(w http.ResponseWriter, r *http.Request, params map[string]string) {
	q := r.URL.Query()
	limit, ok := intParam(w, q, "limit", defaultReadLimit, 1, maxReadLimit)
	if !ok {
		return
	}
	start := int64(0)
	if v := q.Get("start"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			writeProblem(w, badRequest("INVALID_QUERY", fmt.Sprintf("start=%q: not an integer", v)))
			return
		}
		start = n
	}
	id := params["id"]
	if _, err := a.cfg.Worker.World.GetRun(r.Context(), &world.GetRunParams{RunID: id}); err != nil {
		a.fail(w, r, err)
		return
	}
	page, err := a.client.ReadStreamPage(r.Context(), id, client.StreamOptions{Namespace: params["name"], Start: start, Limit: limit})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := chunkPage{Chunks: make([]apiChunk, 0, len(page.Chunks)), Next: page.Next, Done: page.Done}
	size := 0
	for i, c := range page.Chunks {
		// A page is cut to what the API returns: the rest is the next one's.
		// A chunk too large alone is a 413 (writeJSON).
		if size += 2*len(c.Data) + 64; size > maxResponseBody && i > 0 {
			out.Next, out.Done = c.Index, false
			break
		}
		out.Chunks = append(out.Chunks, toAPIChunk(c))
	}
	writeJSON(w, http.StatusOK, out)
}

// resume: POST /v1/hooks/resume.
func (a *api) resume(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	var req resumeRequest
	if !a.decode(w, r, &req, false) {
		return
	}
	if req.Token == "" {
		writeProblem(w, badRequest("INVALID_BODY", "token is required"))
		return
	}
	h, err := a.client.GetHookByToken(r.Context(), req.Token)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if h.IsWebhook {
		writeProblem(w, &problem{Type: problemType("webhook"), Title: "Conflict", Status: http.StatusConflict, Code: "WEBHOOK",
			RunID: h.RunID, Detail: "this token is a webhook's: deliver to the webhook's URL, which turns the HTTP request into its payload"})
		return
	}
	payload := req.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	h, err = a.client.ResumeHook(r.Context(), req.Token, payload)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, resumeResponse{HookID: h.ID, RunID: h.RunID})
}

// intParam reads an integer query parameter within [lo, hi] (def when
// absent), answering 400 otherwise.
func intParam(w http.ResponseWriter, q url.Values, name string, def, lo, hi int) (int, bool) {
	v := q.Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		writeProblem(w, badRequest("INVALID_QUERY", fmt.Sprintf("%s=%q: want an integer from %d to %d", name, v, lo, hi)))
		return 0, false
	}
	return n, true
}
