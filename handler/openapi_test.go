package handler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	apidoc "github.com/skeinflow/skein/docs/api"
)

// The OpenAPI document is loaded and validated once for the package's
// tests.
var loadOpenAPI = sync.OnceValues(func() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(apidoc.OpenAPI())
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	return doc, nil
})

// TestOpenAPIDocument: docs/api/openapi.yaml is a valid OpenAPI document.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	doc, err := loadOpenAPI()
	if err != nil {
		t.Fatalf("docs/api/openapi.yaml: %v", err)
	}
	if n := len(doc.Paths.Map()); n < 9 {
		t.Errorf("%d paths", n)
	}
}

// conformance wraps the API under test: it validates every response
// against the OpenAPI document (its status, headers, media type and body
// shape for the route's operation; a response of no route, a problem, as
// the Problem schema) and every request that succeeded (2xx) too. A
// deliberately bad request is not checked: the document may refuse it
// before the handler would.
type conformance struct {
	t      *testing.T
	h      http.Handler
	router routers.Router
	doc    *openapi3.T
}

func newConformance(t *testing.T, h http.Handler) http.Handler {
	t.Helper()
	doc, err := loadOpenAPI()
	if err != nil {
		t.Fatalf("docs/api/openapi.yaml: %v", err)
	}
	// The document's server is a Function URL; the test server is local.
	local := *doc
	local.Servers = nil
	router, err := legacy.NewRouter(&local)
	if err != nil {
		t.Fatal(err)
	}
	return &conformance{t: t, h: h, router: router, doc: &local}
}

func (c *conformance) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		c.t.Errorf("read request: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, r)
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())

	resp := rec.Result()
	r.Body = io.NopCloser(bytes.NewReader(body))
	c.check(r, body, resp.StatusCode, resp.Header, rec.Body.Bytes())
}

func (c *conformance) check(r *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	ctx := context.Background()
	what := r.Method + " " + r.URL.RequestURI()
	route, params, err := c.router.FindRoute(r)
	if err != nil && strings.Contains(r.URL.EscapedPath(), "%2F") {
		// The router matches the decoded path: find the route of an
		// escaped slash in a parameter with the slash replaced.
		find := r.Clone(ctx)
		find.URL.RawPath = ""
		find.URL.Path = strings.ReplaceAll(r.URL.EscapedPath(), "%2F", "_")
		route, params, err = c.router.FindRoute(find)
	}
	if err != nil {
		// No operation: the answer must be a problem.
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			c.t.Errorf("%s: the document has no operation (%v) but the API answered %d", what, err, status)
		}
		var v any
		if header.Get("Content-Type") != "application/problem+json" || json.Unmarshal(body, &v) != nil {
			c.t.Errorf("%s: %d %s %s is not a problem", what, status, header.Get("Content-Type"), body)
			return
		}
		if err := c.doc.Components.Schemas["Problem"].Value.VisitJSON(v); err != nil {
			c.t.Errorf("%s: the problem %s does not fit the Problem schema: %v", what, body, err)
		}
		return
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts}
	if status < 300 {
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			c.t.Errorf("%s: a request the API took (%d) does not fit the document: %v", what, status, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header, Options: opts}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		c.t.Errorf("%s: the response %d %s does not fit the document: %v", what, status, strings.TrimSpace(string(body)), err)
	}
}
