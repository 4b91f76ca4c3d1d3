package handler

import (
	"context"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/skeinflow/skein/client"
)

// APIHandler is the API function's handler type, for lambda.Start (the
// same shape as WebhookHandler: a Function URL event in, its response out).
type APIHandler = func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error)

// APIPrefix is the path prefix of every route of the HTTP API: its
// version. A change that breaks a client gets a new prefix.
const APIPrefix = "/v1"

// NewAPI returns the API function's handler: the HTTP API NewAPIServer
// serves, behind a Lambda Function URL (or an API Gateway HTTP API with
// payload format 2.0). The template gives the Function URL AuthType
// AWS_IAM, so Lambda refuses a request without a valid SigV4 signature of
// a principal allowed to call lambda:InvokeFunctionUrl before the handler
// sees it; the handler logs the caller's ARN from the event. A request
// still running DefaultReturnMargin before the function's deadline is cancelled.
func NewAPI(c Config, opts ...knobs.Option) (APIHandler, error) {
	inv := &invocation{}
	cfg := c.settle(opts)
	cfg.Worker.Logger = withRequestID(cfg.Worker.Logger, inv)
	a, err := newAPI(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		return a.lambda(ctx, inv, req), nil
	}, nil
}

// NewAPIServer returns the HTTP API as a net/http handler over cfg.Worker.World,
// for a server of one's own or a test on the local world (it checks no
// credentials: put it behind whatever authenticates callers). The routes,
// under APIPrefix, are documented in docs/api/openapi.yaml:
//
//	POST /v1/workflows/{name}/runs   start a run (201; 200 for an idempotency key seen before)
//	GET  /v1/runs                    list runs, newest first (?workflow, ?status, ?limit, ?cursor)
//	GET  /v1/runs/{id}               a run: status, timings, input, output or error
//	GET  /v1/runs/{id}/result        its output once completed (425 while it has not ended)
//	POST /v1/runs/{id}/cancel        cancel it
//	GET  /v1/runs/{id}/streams       its streams
//	GET  /v1/runs/{id}/stream        chunks of its default stream (?start, ?limit)
//	GET  /v1/runs/{id}/streams/{ns}  chunks of a named stream
//	POST /v1/hooks/resume            resume a hook by its token
//	GET  /v1/openapi.yaml            the OpenAPI document
//
// Errors are RFC 9457 problem details (application/problem+json) whose
// status is that of the world's sentinel error (world.Status): 404 not
// found, 409 conflict, 410 gone, 425 too early, 400 invalid; an unknown
// workflow is 404 and an input that does not decode into the workflow's
// input type 400, and neither creates a run. cfg.Worker.Registry is required:
// it names the workflows that can be started and their input types.
func NewAPIServer(cfg Config, opts ...knobs.Option) (http.Handler, error) {
	a, err := newAPI(cfg.settle(opts))
	if err != nil {
		return nil, err
	}
	return a, nil
}

type api struct {
	cfg    settings
	client *client.Client
	log    *slog.Logger
	routes []route
}

func newAPI(cfg settings) (*api, error) {
	if err := cfg.validate(true); err != nil {
		return nil, err
	}
	w := cfg.Worker
	c, err := client.New(client.Config{World: w.World, Registry: w.Registry, Logger: w.Logger, Version: w.Version}, cfg.opts...)
	if err != nil {
		return nil, fmt.Errorf("handler: Config.Worker: %w", err)
	}
	a := &api{cfg: cfg, client: c, log: w.Logger}
	a.routes = a.table()
	return a, nil
}

// lambda serves one Function URL event.
func (a *api) lambda(ctx context.Context, inv *invocation, req events.LambdaFunctionURLRequest) events.LambdaFunctionURLResponse {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		inv.set(lc.AwsRequestID)
	} else {
		inv.set("")
	}
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-a.cfg.returnMargin))
		defer cancel()
	}
	rec := newRecorder()
	hreq, err := httpRequest(ctx, req)
	if err != nil {
		a.log.WarnContext(ctx, "handler: bad API request", "reason", err.Error())
		writeProblem(rec, &problem{Type: problemType("invalid-request"), Title: "Bad Request", Status: http.StatusBadRequest,
			Code: "INVALID_REQUEST", Detail: err.Error()})
		return rec.response()
	}
	caller := ""
	if iam := req.RequestContext.Authorizer; iam != nil && iam.IAM != nil {
		caller = iam.IAM.UserARN
		if caller == "" {
			caller = iam.IAM.CallerID
		}
	}
	a.serve(rec, hreq, caller)
	return rec.response()
}

// ServeHTTP serves the API over net/http.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.serve(w, r, "") }

func (a *api) serve(w http.ResponseWriter, r *http.Request, caller string) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	pattern := a.route(sw, r)
	attrs := []any{"method", r.Method, "route", pattern, "path", r.URL.Path, "status", sw.status, "duration", time.Since(start)}
	if caller != "" {
		attrs = append(attrs, "caller", caller)
	}
	a.log.InfoContext(r.Context(), "handler: API request", attrs...)
}

// route finds the request's route and serves it; it returns the route's
// pattern for the log ("" when none matched).
func (a *api) route(w http.ResponseWriter, r *http.Request) string {
	segs, err := splitPath(r.URL.EscapedPath())
	if err != nil {
		writeProblem(w, badRequest("INVALID_PATH", "the path does not decode: "+err.Error()))
		return ""
	}
	var allow []string
	for _, rt := range a.routes {
		params, ok := rt.match(segs)
		if !ok {
			continue
		}
		if rt.method != r.Method {
			allow = append(allow, rt.method)
			continue
		}
		if !rt.queryKnown(w, r) {
			return rt.pattern
		}
		rt.serve(w, r, params)
		return rt.pattern
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeProblem(w, &problem{Type: problemType("method-not-allowed"), Title: "Method Not Allowed", Status: http.StatusMethodNotAllowed,
			Code: "METHOD_NOT_ALLOWED", Detail: fmt.Sprintf("%s is not allowed here: allowed %s", r.Method, strings.Join(allow, ", "))})
		return ""
	}
	writeProblem(w, &problem{Type: problemType("no-such-route"), Title: "Not Found", Status: http.StatusNotFound,
		Code: "NO_SUCH_ROUTE", Detail: fmt.Sprintf("no route %s %s (the API's routes are under %s/)", r.Method, r.URL.Path, APIPrefix)})
	return ""
}

// route is one route: a method and a path pattern whose {name} segments
// are parameters.
type route struct {
	method  string
	pattern string
	segs    []string
	serve   func(w http.ResponseWriter, r *http.Request, params map[string]string)
	query   []string // the query parameters the route takes
}

func newRoute(method, pattern string, serve func(http.ResponseWriter, *http.Request, map[string]string), query ...string) route {
	return route{method: method, pattern: pattern, segs: strings.Split(strings.TrimPrefix(pattern, "/"), "/"), serve: serve, query: query}
}

// queryKnown answers 400 to a request with a query parameter the route
// does not take (say ?idempotencyKey= on a start, which would otherwise be
// ignored and start a second run) and reports whether there was none.
func (rt route) queryKnown(w http.ResponseWriter, r *http.Request) bool {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeProblem(w, badRequest("INVALID_QUERY", "the query does not decode: "+err.Error()))
		return false
	}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if !slices.Contains(rt.query, name) {
			takes := "no query parameters"
			if len(rt.query) > 0 {
				takes = "only " + strings.Join(rt.query, ", ")
			}
			writeProblem(w, badRequest("INVALID_QUERY", fmt.Sprintf("unknown query parameter %q: %s %s takes %s", name, rt.method, rt.pattern, takes)))
			return false
		}
	}
	return true
}

// match matches the path's decoded segments, returning the parameters.
func (rt route) match(segs []string) (map[string]string, bool) {
	if len(segs) != len(rt.segs) {
		return nil, false
	}
	var params map[string]string
	for i, s := range rt.segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			if segs[i] == "" {
				return nil, false
			}
			if params == nil {
				params = map[string]string{}
			}
			params[s[1:len(s)-1]] = segs[i]
			continue
		}
		if s != segs[i] {
			return nil, false
		}
	}
	return params, true
}

// splitPath splits an escaped path into its decoded segments, so that a
// parameter may hold an escaped slash (%2F).
func splitPath(escaped string) ([]string, error) {
	segs := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil {
			return nil, err
		}
		segs[i] = d
	}
	return segs, nil
}

// statusWriter remembers the status written, for the log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}
