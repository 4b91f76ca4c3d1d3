package sdk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
)

// WebhookPath is where WebhookHandler expects to be mounted: a
// webhook's URL is WebhookPath followed by its token.
const WebhookPath = "/.well-known/workflow/v1/webhook/"

// maxWebhookBody bounds a webhook request's body.
const maxWebhookBody = 1 << 20

// Response is an HTTP response a webhook answers with.
type Response struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

// WebhookOptions says how a webhook answers the requests it receives: by
// default 202 Accepted with an empty body; with Response, that response;
// with Manual, the response a step sends with Request.Respond.
type WebhookOptions struct {
	Response *Response
	Manual   bool
}

type webhookMeta struct {
	Response *Response `json:"response,omitempty"`
	Manual   bool      `json:"manual,omitempty"`
}

// Request is an HTTP request a webhook received.
type Request struct {
	Method string `json:"method"`
	// URL is the request's URL with its last path segment, the webhook's
	// token, shown as a digest ("sha256:" and 12 hex digits of its SHA-256): the token is the capability to
	// resume the webhook, and the request is recorded in the run's log,
	// which is read more widely than the webhook's URL may be (Webhook.URL
	// and Webhook.Token give the workflow its own URL).
	URL    string      `json:"url"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
	// ReplyRun and ReplyTo name the stream the handler waits on for a
	// manual response.
	ReplyRun string `json:"replyRun,omitempty"`
	ReplyTo  string `json:"replyTo,omitempty"`
}

// Respond sends the response of a manual webhook's request. Call it from a
// step (pass the Request to the step).
func (r *Request) Respond(ctx context.Context, resp Response) error {
	if r.ReplyTo == "" {
		return errors.New("workflow: this webhook does not take a manual response")
	}
	info, ok := engine.StepInfoFrom(ctx)
	if !ok {
		return errors.New("workflow: Request.Respond must be called from a step")
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return &SerializationError{What: "webhook response", Err: err}
	}
	if err := info.World.WriteStream(ctx, &world.WriteStreamParams{RunID: r.ReplyRun, Name: r.ReplyTo, Chunks: [][]byte{b}}); err != nil {
		if errors.Is(err, world.ErrConflict) {
			return errors.New("workflow: webhook request already answered")
		}
		return err
	}
	return info.World.CloseStream(ctx, &world.CloseStreamParams{RunID: r.ReplyRun, Name: r.ReplyTo})
}

// Webhook is a hook resumed by HTTP requests to its URL. Like any hook it
// is not single-use: every request delivered while it is active is
// recorded, in order, and Receive or Next returns them one per call. It
// takes requests until the workflow disposes of it or the run ends; to
// accept one request only, Dispose it after the first Receive (later
// requests get 404).
//
// The URL needs no other credential: whoever holds the token can deliver
// requests, so hand it only to the intended sender. The generated token has
// 132 random bits, which nobody can derive from the run ID; the handler
// keeps it out of its logs.
type Webhook struct{ h *Hook[*Request] }

// NewWebhook creates a webhook in the workflow. Its token is generated (see
// HookOptions.Token).
func NewWebhook(ctx Context, opts WebhookOptions) *Webhook {
	meta, err := json.Marshal(webhookMeta(opts))
	if err != nil {
		return &Webhook{h: &Hook[*Request]{err: &SerializationError{What: "webhook response", Err: err}}}
	}
	return &Webhook{h: newHook[*Request](ctx.impl(), "", meta, true)}
}

// Token returns the webhook's token.
func (w *Webhook) Token() string { return w.h.Token() }

// URL returns the webhook's path under WebhookPath.
func (w *Webhook) URL() string { return WebhookPath + url.PathEscape(w.h.Token()) }

// Next returns a future of the next request.
func (w *Webhook) Next(ctx Context) Future[*Request] { return w.h.Next(ctx) }

// Receive waits for the next request.
func (w *Webhook) Receive(ctx Context) (*Request, error) { return w.h.Receive(ctx) }

// Dispose stops the webhook: later requests get 404.
func (w *Webhook) Dispose(ctx Context) { w.h.Dispose(ctx) }

// WebhookAllow is the Allow header of the webhook handler's answers to the
// methods it does not deliver: POST, PUT and PATCH deliver a request to the
// webhook; OPTIONS is answered without delivering.
const WebhookAllow = "POST, PUT, PATCH, OPTIONS"

// deliversWebhook reports whether a request with method is delivered to a
// webhook. GET and HEAD never are: link previews, crawlers, prefetchers and
// security scanners send them unasked, and must not consume an approval.
// Neither are OPTIONS (a browser's CORS preflight), DELETE, TRACE and the
// like.
func deliversWebhook(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		return true
	}
	return false
}

// WebhookHandler returns the HTTP handler resuming webhooks: a POST, PUT
// or PATCH request to WebhookPath+token is delivered to the webhook holding
// token. OPTIONS answers 204 and any other method 405, both with an Allow
// header (WebhookAllow), before the token is looked up and without
// delivering anything. An unknown, disposed or non-webhook token, or one
// whose run has ended, answers 404 with an empty body. A body over
// three quarters of the World's MaxPayload (768 KiB by default: the body
// is recorded base64-encoded), or a request its run's limits refuse
// (world.Limits: the request as recorded, method, URL and headers
// included, over MaxPayload, so a body of 768 KiB less a few hundred
// bytes at most; the run's bytes over MaxRunBytes; its events at
// MaxEvents), answers 413 with a problem+json body (code
// LIMIT_EXCEEDED); one that does not arrive within WebhookBodyTimeout
// answers 408. Neither delivers anything. What it logs never holds a
// token, only its digest ("sha256:" and 12 hex digits).
func WebhookHandler(c *Client) http.Handler {
	h := &webhookHandler{c: c, timeout: 30 * time.Second, bodyTimeout: WebhookBodyTimeout}
	h.deliver = h.commit
	return h
}

// WebhookBodyTimeout bounds how long the webhook handler waits for a
// request's body (at most 768 KiB by default) to arrive once it has looked the token
// up: a sender that stalls is answered 408 Request Timeout and delivers
// nothing, and holds no goroutine past it. The handler sets the deadline
// on the connection (http.ResponseController), so it holds in any
// net/http server, whatever its ReadTimeout.
const WebhookBodyTimeout = 10 * time.Second

type webhookHandler struct {
	c           *Client
	timeout     time.Duration
	bodyTimeout time.Duration
	// deliver hands a request over to the hook: commit (WebhookHandler) or
	// enqueue (QueuedWebhookHandler). A world.ErrNotFound error answers 404.
	deliver func(ctx context.Context, token string, hk *world.Hook, r *Request) error
}

// readBody reads a request's body, up to one byte past limit, within
// h.bodyTimeout (where the server's connection takes a deadline: a Lambda
// event's body is already in memory). The deadline is lifted once the body
// is in, so that a manual webhook's wait for its response is not cut
// short; after a failed read it stays, and the connection closes after the
// answer (net/http would otherwise wait for the rest of the body).
func (h *webhookHandler) readBody(rw http.ResponseWriter, req *http.Request, limit int64) ([]byte, error) {
	rc := http.NewResponseController(rw)
	deadline := rc.SetReadDeadline(time.Now().Add(h.bodyTimeout)) == nil
	body, err := io.ReadAll(io.LimitReader(req.Body, limit+1))
	switch {
	case err != nil:
		rw.Header().Set("Connection", "close")
	case deadline:
		_ = rc.SetReadDeadline(time.Time{})
	}
	return body, err
}

// commit appends the request to the hook's run and wakes the run.
func (h *webhookHandler) commit(ctx context.Context, token string, _ *world.Hook, r *Request) error {
	payload, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = engine.ResumeHook(ctx, h.c.w, h.c.now, token, payload)
	return err
}

func (h *webhookHandler) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	if !deliversWebhook(req.Method) {
		rw.Header().Set("Allow", WebhookAllow)
		if req.Method == http.MethodOptions {
			rw.WriteHeader(http.StatusNoContent)
			return
		}
		rw.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	token := engine.WebhookToken(req.URL.Path)
	if token == "" {
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	ctx := req.Context()
	hk, err := h.c.w.GetHookByToken(ctx, &world.GetHookByTokenParams{Token: token})
	if err != nil && !errors.Is(err, world.ErrNotFound) && !errors.Is(err, world.ErrInvalid) {
		// A failed read is not an unknown token: the sender should retry.
		h.c.log.Warn("workflow: webhook lookup", "token", engine.RedactToken(token), "err", redactTokenIn(err.Error(), token))
		rw.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if err != nil || !hk.IsWebhook {
		rw.WriteHeader(http.StatusNotFound)
		return
	}
	var meta webhookMeta
	_ = json.Unmarshal(hk.Metadata, &meta)
	// Read no more than the run's payload limit takes (the payload is the
	// body and more): a larger body is refused before it is buffered.
	maxBody := webhookBodyLimit(runrules.LimitsOf(h.c.w).MaxPayload)
	body, err := h.readBody(rw, req, maxBody)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		rw.WriteHeader(http.StatusRequestTimeout)
		return
	case err != nil:
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	if int64(len(body)) > maxBody {
		writeTooLarge(rw, fmt.Sprintf("the body is over the limit of %d bytes a webhook request's body may take (nothing delivered)", maxBody))
		return
	}
	r := Request{Method: req.Method, URL: engine.RedactWebhookURL(req.URL), Header: req.Header.Clone(), Body: body}
	if meta.Manual {
		var b [12]byte
		_, _ = rand.Read(b[:])
		r.ReplyRun, r.ReplyTo = hk.RunID, "webhook-reply."+hex.EncodeToString(b[:])
	}
	if err := h.deliver(ctx, token, hk, &r); err != nil {
		if errors.Is(err, world.ErrNotFound) {
			rw.WriteHeader(http.StatusNotFound)
			return
		}
		var le *world.LimitError
		if errors.As(err, &le) {
			// Too large, or the run is full: retrying will not help.
			writeTooLarge(rw, webhookLimitDetail(le))
			return
		}
		h.c.log.Warn("workflow: webhook resume", "token", engine.RedactToken(token), "err", redactTokenIn(err.Error(), token))
		rw.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	switch {
	case meta.Manual:
		resp, err := h.awaitReply(ctx, r.ReplyRun, r.ReplyTo)
		if err != nil {
			h.c.log.Warn("workflow: webhook manual response", "token", engine.RedactToken(token), "err", redactTokenIn(err.Error(), token))
			rw.WriteHeader(http.StatusGatewayTimeout)
			return
		}
		writeResponse(rw, resp)
	case meta.Response != nil:
		writeResponse(rw, meta.Response)
	default:
		rw.WriteHeader(http.StatusAccepted)
	}
}

func (h *webhookHandler) awaitReply(ctx context.Context, runID, name string) (*Response, error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	for ch, err := range world.Tail(ctx, h.c.w, world.TailParams{RunID: runID, Name: name}) {
		if err != nil {
			return nil, err
		}
		var resp Response
		if err := json.Unmarshal(ch.Data, &resp); err != nil {
			return nil, err
		}
		return &resp, nil
	}
	return nil, fmt.Errorf("workflow: webhook reply stream closed without a response")
}

func writeResponse(rw http.ResponseWriter, resp *Response) {
	for k, vs := range resp.Header {
		for _, v := range vs {
			rw.Header().Add(k, v)
		}
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	rw.WriteHeader(status)
	_, _ = rw.Write(resp.Body)
}

// webhookBodyLimit is the largest body a webhook request may carry when
// one payload may take maxPayload bytes: the request is recorded with its
// body base64-encoded (4 bytes for 3), so three quarters of it, and never
// more than maxWebhookBody. With the default MaxPayload (1 MiB) it is
// 768 KiB; the request's method, URL and headers take the rest, and a
// request that does not fit with them is refused too.
func webhookBodyLimit(maxPayload int) int64 {
	return min(maxWebhookBody, int64(maxPayload)/4*3)
}

// webhookLimitDetail says which limit refused a webhook request.
func webhookLimitDetail(le *world.LimitError) string {
	if le.Limit == "events" {
		return fmt.Sprintf("the run has reached its limit of %d events and takes no more requests (nothing delivered)", le.Max)
	}
	return fmt.Sprintf("the request would take the run's %s to %d bytes, over its limit of %d (nothing delivered)", le.Limit, le.Size, le.Max)
}

// writeTooLarge answers 413 with an RFC 9457 problem (code LIMIT_EXCEEDED):
// the sender must not retry the same request.
func writeTooLarge(rw http.ResponseWriter, detail string) {
	b, _ := json.Marshal(map[string]any{"type": "urn:skein:problem:limit-exceeded", "title": "Content Too Large",
		"status": http.StatusRequestEntityTooLarge, "code": world.CodeLimitExceeded, "detail": detail})
	rw.Header().Set("Content-Type", "application/problem+json")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(http.StatusRequestEntityTooLarge)
	_, _ = rw.Write(append(b, '\n'))
}
