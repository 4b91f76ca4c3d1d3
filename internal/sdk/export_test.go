package sdk

import (
	"errors"
	"net/http"
	"sync/atomic"
	"time"
)

// FatalCause returns the error err marks as fatal (Fatal), if it does.
func FatalCause(err error) (error, bool) {
	var f *fatalError
	if !errors.As(err, &f) {
		return nil, false
	}
	return f.Err, true
}

// StepTimeout is what a step timeout err is or wraps says.
type StepTimeout struct {
	Step    string
	Attempt int
	Timeout time.Duration
	Err     error
}

// StepTimeoutOf returns the step timeout err is or wraps, if any.
func StepTimeoutOf(err error) (StepTimeout, bool) {
	var te *stepTimeoutError
	if !errors.As(err, &te) {
		return StepTimeout{}, false
	}
	return StepTimeout{Step: te.Step, Attempt: te.Attempt, Timeout: te.Timeout, Err: te.Err}, true
}

// VersionFromBuild exposes versionFromBuild to the external tests.
var VersionFromBuild = versionFromBuild

// WebhookHandlerWithBodyTimeout is WebhookHandler with another body
// timeout, for tests that stall a request.
func (c *Client) WebhookHandlerWithBodyTimeout(d time.Duration) http.Handler {
	h := &webhookHandler{c: c, timeout: 30 * time.Second, bodyTimeout: d}
	h.deliver = h.commit
	return h
}

// StreamNameOf is streamName, for tests that look at the World's streams.
func StreamNameOf(namespace string) string {
	n, err := streamName(namespace)
	if err != nil {
		panic(err)
	}
	return n
}

// countingPromise counts the looks at a promise's state.
type countingPromise struct {
	promise
	looks *atomic.Int64
}

func (p countingPromise) state() (int64, bool) {
	p.looks.Add(1)
	return p.promise.state()
}

// CountLooks returns fs with every look at a future's state counted in
// looks.
func CountLooks[T any](fs []Future[T], looks *atomic.Int64) []Future[T] {
	out := make([]Future[T], len(fs))
	for i, f := range fs {
		out[i] = Future[T]{p: countingPromise{promise: f.promise(), looks: looks}}
	}
	return out
}
