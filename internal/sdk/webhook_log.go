package sdk

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/skeinflow/skein/internal/engine"
)

// logRequests wraps the Worker's webhook server: each request is logged at
// Debug with its method, the token's digest (sha256:…) (never the token,
// nor the path that holds it), the status answered and how long it took.
func logRequests(log *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		start := time.Now()
		sr := &statusRecorder{ResponseWriter: rw, status: http.StatusOK}
		h.ServeHTTP(sr, req)
		attrs := []any{"method", req.Method, "status", sr.status, "duration", time.Since(start)}
		if token, ok := strings.CutPrefix(req.URL.Path, WebhookPath); ok && token != "" {
			if t, err := url.PathUnescape(token); err == nil {
				token = t
			}
			attrs = append(attrs, "token", engine.RedactToken(token))
		}
		log.Debug("workflow: webhook request", attrs...)
	})
}

// statusRecorder remembers the status a handler answered.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the connection's writer (the
// webhook handler sets a read deadline on the body).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush passes a flush on, for handlers that stream.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
