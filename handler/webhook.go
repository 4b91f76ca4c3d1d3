package handler

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/worker"
)

// WebhookHandler is the webhook function's handler type, for lambda.Start.
type WebhookHandler = func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error)

// NewWebhook returns the webhook function's handler, behind a Lambda
// Function URL or an API Gateway HTTP API (payload format 2.0, which has the
// same shape). It writes nothing to the run: it looks the hook up by the
// token and enqueues the request on the World's queue (a large one through
// Config.Worker.Inbox), and the flow handler commits it, once however often the
// message is delivered (worker.QueuedWebhookHandler), so that the
// public function's role needs no write to the table. It answers as
// worker.WebhookHandler does locally, except that a 202 says the
// request is queued (a request the flow handler then finds no active hook
// for is dropped and logged there):
// only POST, PUT and PATCH deliver a request (OPTIONS answers 204 and other
// methods 405, with an Allow header, and deliver nothing, so that a CORS
// preflight or a link preview does not consume an approval); the last path
// segment is the token; 202 with an empty body by default, the
// webhook's static response, or the response a step sends with
// Request.Respond; 404 with an empty body for an unknown, disposed or
// non-webhook token, or one whose run has ended. Base64 request bodies are
// decoded; response bodies that are not UTF-8 are sent base64-encoded. A
// request still waiting for a step's response DefaultReturnMargin before the
// function's deadline is answered 504. Each request is logged at INFO with
// its method, status and duration; the token in its path is logged only as
// redact.Token's digest ("sha256:" and 12 hex digits).
func NewWebhook(c Config, opts ...knobs.Option) (WebhookHandler, error) {
	cfg := c.settle(opts)
	if err := cfg.validate(false); err != nil {
		return nil, err
	}
	inv := &invocation{}
	logger := withRequestID(cfg.Worker.Logger, inv)
	cl, err := client.New(client.Config{World: cfg.Worker.World, Registry: cfg.Worker.Registry, Logger: logger, Version: cfg.Worker.Version}, cfg.opts...)
	if err != nil {
		return nil, fmt.Errorf("handler: Config.Worker: %w", err)
	}
	h := &webhookHandler{cfg: cfg, http: worker.QueuedWebhookHandler(cl, cfg.Worker.Inbox), log: logger, inv: inv}
	return h.handle, nil
}

type webhookHandler struct {
	cfg  settings
	http http.Handler
	log  *slog.Logger
	inv  *invocation
}

func (h *webhookHandler) handle(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	start := time.Now()
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		h.inv.set(lc.AwsRequestID)
	} else {
		h.inv.set("")
	}
	timeout := h.cfg.webhookTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d)-h.cfg.returnMargin)
	}
	ctx, cancel := context.WithTimeout(ctx, max(timeout, 0))
	defer cancel()

	hreq, err := httpRequest(ctx, req)
	if err != nil {
		raw := req.RawPath
		if raw == "" {
			raw = req.RequestContext.HTTP.Path
		}
		path, token := redactPath(raw)
		reason := err.Error()
		if token != "" {
			reason = strings.ReplaceAll(reason, token, redact.Token(token))
		}
		h.log.WarnContext(ctx, "handler: bad webhook request", "path", path, "reason", reason)
		return events.LambdaFunctionURLResponse{StatusCode: http.StatusBadRequest}, nil
	}
	rec := newRecorder()
	h.http.ServeHTTP(rec, hreq)
	resp := rec.response()
	path, _ := redactPath(hreq.URL.Path)
	h.log.InfoContext(ctx, "handler: webhook request", "method", hreq.Method, "path", path,
		"status", resp.StatusCode, "duration", time.Since(start))
	return resp, nil
}

// redactPath returns a webhook path as logs show it, its last segment (the
// token, which resumes the webhook) replaced by redact.Token's
// digest, and that segment.
func redactPath(path string) (redacted, token string) {
	i := strings.LastIndexByte(path, '/')
	token = path[i+1:]
	if token == "" {
		return path, ""
	}
	return path[:i+1] + redact.Token(token), token
}

// httpRequest builds the net/http request a Function URL (or HTTP API v2)
// event describes.
func httpRequest(ctx context.Context, req events.LambdaFunctionURLRequest) (*http.Request, error) {
	method := req.RequestContext.HTTP.Method
	if method == "" {
		method = http.MethodGet
	}
	path := req.RawPath
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	if path == "" || path[0] != '/' {
		path = "/" + path
	}
	host := req.RequestContext.DomainName
	if host == "" {
		host = "localhost"
	}
	u := &url.URL{Scheme: "https", Host: host, RawQuery: req.RawQueryString}
	p, err := url.PathUnescape(path)
	if err != nil {
		return nil, fmt.Errorf("path: %w", err)
	}
	u.Path, u.RawPath = p, path
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(req.Body); err != nil {
			return nil, fmt.Errorf("base64 body: %w", err)
		}
	}
	hreq, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range req.Headers {
		hreq.Header.Set(k, v)
	}
	if len(req.Cookies) > 0 {
		hreq.Header.Set("Cookie", strings.Join(req.Cookies, "; "))
	}
	hreq.Host = host
	hreq.RemoteAddr = req.RequestContext.HTTP.SourceIP
	hreq.RequestURI = u.RequestURI()
	return hreq, nil
}

// recorder is the http.ResponseWriter the webhook handler writes to.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

// response converts what was written: multi-valued headers joined with
// commas, Set-Cookie as cookies, a body that is not UTF-8 base64-encoded.
func (r *recorder) response() events.LambdaFunctionURLResponse {
	resp := events.LambdaFunctionURLResponse{StatusCode: r.status}
	if resp.StatusCode == 0 {
		resp.StatusCode = http.StatusOK
	}
	for k, vs := range r.header {
		if len(vs) == 0 {
			continue
		}
		if k == "Set-Cookie" {
			resp.Cookies = append(resp.Cookies, vs...)
			continue
		}
		if resp.Headers == nil {
			resp.Headers = map[string]string{}
		}
		resp.Headers[k] = strings.Join(vs, ",")
	}
	if b := r.body.Bytes(); utf8.Valid(b) {
		resp.Body = string(b)
	} else {
		resp.Body, resp.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return resp
}
