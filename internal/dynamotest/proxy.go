package dynamotest

import (
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

// Proxy returns an HTTP reverse proxy to target (an emulator's endpoint)
// that injects the Injector's faults into the requests of service
// ("DynamoDB", "SQS" or "S3"), for a client the test cannot give
// middleware to, such as another process pointed at the proxy with
// AWS_ENDPOINT_URL_*. Each request is one attempt: a fault other than
// LostAnswer is answered without forwarding; LostAnswer forwards the
// request, discards the answer and replies 500. Counts names the operation
// as the SDK's middleware would (from X-Amz-Target, or for S3 from the
// method, path and query).
func (in *Injector) Proxy(service string, target *url.URL) http.Handler {
	rp := httputil.NewSingleHostReverseProxy(target)
	// A caller that went away (a killed process) is not worth a log line.
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := operation(service, r)
		f := in.pick(service, op)
		if f == "" {
			rp.ServeHTTP(w, r)
			return
		}
		if f == LostAnswer {
			rec := &discard{header: http.Header{}}
			rp.ServeHTTP(rec, r)
			f = ServerError
		} else {
			_, _ = io.Copy(io.Discard, r.Body)
		}
		resp := answer(nil, service, op, f).Response
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		if r.Method != http.MethodHead {
			_, _ = io.Copy(w, resp.Body)
		}
	})
}

// operation names a request's API operation.
func operation(service string, r *http.Request) string {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		if i := strings.LastIndexByte(t, '.'); i >= 0 {
			return t[i+1:]
		}
		return t
	}
	if service != "S3" {
		return "Unknown"
	}
	q := r.URL.Query()
	path := strings.TrimPrefix(r.URL.Path, "/")
	if strings.HasSuffix(r.Host, ".s3.amazonaws.com") || strings.Count(r.Host, ".") > 3 {
		path = "bucket/" + path // virtual-hosted: the bucket is in the host
	}
	object := strings.Contains(strings.TrimSuffix(path, "/"), "/")
	switch {
	case r.Method == http.MethodPost && q.Has("delete"):
		return "DeleteObjects"
	case r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "":
		return "CopyObject"
	case r.Method == http.MethodPut && q.Has("partNumber"):
		return "UploadPart"
	case r.Method == http.MethodPut && object:
		return "PutObject"
	case r.Method == http.MethodPut:
		return "CreateBucket"
	case r.Method == http.MethodGet && object:
		return "GetObject"
	case r.Method == http.MethodGet:
		return "ListObjectsV2"
	case r.Method == http.MethodHead && object:
		return "HeadObject"
	case r.Method == http.MethodHead:
		return "HeadBucket"
	case r.Method == http.MethodDelete && object:
		return "DeleteObject"
	case r.Method == http.MethodDelete:
		return "DeleteBucket"
	}
	return "Unknown"
}

// discard is a ResponseWriter that keeps nothing: the answer a LostAnswer
// fault loses.
type discard struct {
	header http.Header
}

func (d *discard) Header() http.Header { return d.header }

func (d *discard) Write(p []byte) (int, error) { return len(p), nil }

func (d *discard) WriteHeader(int) {}
