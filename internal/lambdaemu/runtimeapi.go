package lambdaemu

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Runtime API constants (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html).
const (
	runtimeAPIVersion = "2018-06-01"

	HeaderRequestID   = "Lambda-Runtime-Aws-Request-Id"
	HeaderDeadlineMs  = "Lambda-Runtime-Deadline-Ms"
	HeaderFunctionARN = "Lambda-Runtime-Invoked-Function-Arn"
	HeaderTraceID     = "Lambda-Runtime-Trace-Id"
	HeaderErrorType   = "Lambda-Runtime-Function-Error-Type"
	trailerErrorType  = "Lambda-Runtime-Function-Error-Type"
	trailerErrorBody  = "Lambda-Runtime-Function-Error-Body"

	// MaxResponseSize is Lambda's limit on a synchronous response payload.
	MaxResponseSize = 6 * 1024 * 1024
	maxErrorSize    = 1024 * 1024
)

// FunctionError is a failed invocation as Lambda reports it: an error the handler returned or a panic
// (Type from the runtime, e.g. "errorString"), or one the platform raised: Sandbox.Timedout (the
// deadline passed and the process was killed), Runtime.ExitError (the process exited or was killed
// mid-invocation, or during init), Runtime.InitError (the runtime posted /init/error),
// Function.ResponseSizeTooLarge.
type FunctionError struct {
	Type       string          `json:"errorType"`
	Message    string          `json:"errorMessage"`
	StackTrace json.RawMessage `json:"stackTrace,omitempty"`
	// Payload is the raw error document the runtime posted, when it posted one.
	Payload []byte `json:"-"`
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("lambda function error: %s: %s", e.Type, e.Message)
}

// Invocation is one request handed to a runtime.
type Invocation struct {
	Payload     []byte
	Timeout     time.Duration // deadline = the moment the runtime receives it + Timeout
	FunctionARN string
	RequestID   string // generated when empty
	TraceID     string // generated when empty
}

// Response is how an invocation ended. Err is set for a function error; Payload for a success.
type Response struct {
	RequestID string
	Payload   []byte
	Err       *FunctionError
	// Deadline is what the runtime was told (Lambda-Runtime-Deadline-Ms).
	Deadline time.Time
	// Duration runs from delivery (the runtime's /next returned) to the response.
	Duration time.Duration
	// Cold is set when this invocation started a new process; InitDuration then runs from process
	// start to its first GET /next (Lambda's Init Duration). Set by Function.
	Cold         bool
	InitDuration time.Duration
}

type outcome struct {
	payload []byte
	ferr    *FunctionError
}

type request struct {
	Invocation
	deadline time.Time
	done     chan outcome // buffered 1: exactly one outcome is sent
}

// RuntimeAPI serves the Lambda Runtime API for one execution environment on 127.0.0.1 (an ephemeral
// port). It hands out one invocation at a time: each GET /next waits until Invoke (or a Function)
// has an invocation for it.
type RuntimeAPI struct {
	ln  net.Listener
	srv *http.Server

	slots chan chan *request // a GET /next waiting for work offers a slot here

	mu        sync.Mutex
	inflight  map[string]*request
	initErr   *FunctionError
	firstNext time.Time

	ready     chan struct{} // closed on the first GET /next
	readyOnce sync.Once
	closed    chan struct{}
	closeOnce sync.Once
}

// NewRuntimeAPI starts a Runtime API server on 127.0.0.1 with an ephemeral port.
func NewRuntimeAPI() (*RuntimeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("runtime api: %w", err)
	}
	a := &RuntimeAPI{
		ln:       ln,
		slots:    make(chan chan *request),
		inflight: map[string]*request{},
		ready:    make(chan struct{}),
		closed:   make(chan struct{}),
	}
	mux := http.NewServeMux()
	base := "/" + runtimeAPIVersion + "/runtime"
	mux.HandleFunc("GET "+base+"/invocation/next", a.handleNext)
	mux.HandleFunc("POST "+base+"/invocation/{id}/response", a.handleResponse)
	mux.HandleFunc("POST "+base+"/invocation/{id}/error", a.handleError)
	mux.HandleFunc("POST "+base+"/init/error", a.handleInitError)
	a.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = a.srv.Serve(ln) }()
	return a, nil
}

// Addr is host:port, the value of AWS_LAMBDA_RUNTIME_API.
func (a *RuntimeAPI) Addr() string { return a.ln.Addr().String() }

// Ready is closed when the runtime first asks for work (its init phase is over).
func (a *RuntimeAPI) Ready() <-chan struct{} { return a.ready }

// FirstNext is when the runtime first asked for work (zero before).
func (a *RuntimeAPI) FirstNext() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.firstNext
}

// InitError is what the runtime posted to /init/error, or nil.
func (a *RuntimeAPI) InitError() *FunctionError {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.initErr
}

// Close stops the server and drops open connections (a runtime still polling sees an error).
func (a *RuntimeAPI) Close() error {
	var err error
	a.closeOnce.Do(func() {
		close(a.closed)
		err = a.srv.Close()
	})
	return err
}

// Invoke hands inv to the runtime and waits for its response, its error, or its deadline. On a
// timeout it returns a Sandbox.Timedout function error; killing the process is the caller's business
// (Function does it). The error return is for the harness only (ctx ended, the API closed).
func (a *RuntimeAPI) Invoke(ctx context.Context, inv Invocation) (*Response, error) {
	req := newRequest(inv)
	if err := a.deliver(ctx, req, nil, nil); err != nil {
		return nil, err
	}
	return a.await(ctx, req, nil)
}

func newRequest(inv Invocation) *request {
	if inv.RequestID == "" {
		inv.RequestID = newRequestID()
	}
	if inv.TraceID == "" {
		inv.TraceID = newTraceID()
	}
	return &request{Invocation: inv, done: make(chan outcome, 1)}
}

var (
	errExitedBeforeNext = errors.New("the runtime exited before it asked for the invocation")
	errInitTimeout      = errors.New("the runtime did not ask for work within the init timeout")
	errAPIClosed        = errors.New("runtime api closed")
	errExited           = errors.New("the runtime exited during the invocation")
)

// deliver waits for a GET /next and hands it req, stamping the deadline at that moment.
func (a *RuntimeAPI) deliver(ctx context.Context, req *request, exited <-chan struct{}, initTimeout <-chan time.Time) error {
	select {
	case slot := <-a.slots:
		select {
		case <-exited: // a /next left over from a process that has died since: do not hand it work
			slot <- nil
			return errExitedBeforeNext
		default:
		}
		req.deadline = time.Now().Add(req.Timeout)
		a.mu.Lock()
		a.inflight[req.RequestID] = req
		a.mu.Unlock()
		slot <- req
		return nil
	case <-exited:
		return errExitedBeforeNext
	case <-initTimeout:
		return errInitTimeout
	case <-a.closed:
		return errAPIClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// await waits for the outcome of a delivered request. It returns errExited when exited closes first,
// and a Sandbox.Timedout response when the deadline passes.
func (a *RuntimeAPI) await(ctx context.Context, req *request, exited <-chan struct{}) (*Response, error) {
	resp := &Response{RequestID: req.RequestID, Deadline: req.deadline}
	start := req.deadline.Add(-req.Timeout)
	timer := time.NewTimer(time.Until(req.deadline))
	defer timer.Stop()
	finish := func(o outcome) (*Response, error) {
		resp.Duration = time.Since(start)
		resp.Payload, resp.Err = o.payload, o.ferr
		return resp, nil
	}
	select {
	case o := <-req.done:
		return finish(o)
	case <-timer.C:
		a.forget(req.RequestID)
		select { // a response that raced the deadline still counts
		case o := <-req.done:
			return finish(o)
		default:
		}
		resp.Duration = time.Since(start)
		resp.Err = &FunctionError{
			Type: "Sandbox.Timedout",
			Message: fmt.Sprintf("RequestId: %s Error: Task timed out after %.2f seconds",
				req.RequestID, req.Timeout.Seconds()),
		}
		return resp, nil
	case <-exited:
		a.forget(req.RequestID)
		select { // the runtime may have answered just before it exited
		case o := <-req.done:
			return finish(o)
		default:
		}
		resp.Duration = time.Since(start)
		return resp, errExited
	case <-a.closed:
		a.forget(req.RequestID)
		return nil, errAPIClosed
	case <-ctx.Done():
		a.forget(req.RequestID)
		return nil, ctx.Err()
	}
}

func (a *RuntimeAPI) forget(id string) {
	a.mu.Lock()
	delete(a.inflight, id)
	a.mu.Unlock()
}

// take removes and returns the in-flight request id (nil when unknown or already answered).
func (a *RuntimeAPI) take(id string) *request {
	a.mu.Lock()
	defer a.mu.Unlock()
	req := a.inflight[id]
	delete(a.inflight, id)
	return req
}

func (a *RuntimeAPI) handleNext(w http.ResponseWriter, r *http.Request) {
	a.readyOnce.Do(func() {
		a.mu.Lock()
		a.firstNext = time.Now()
		a.mu.Unlock()
		close(a.ready)
	})
	slot := make(chan *request, 1)
	select {
	case a.slots <- slot:
	case <-r.Context().Done():
		return
	case <-a.closed:
		writeAPIError(w, http.StatusServiceUnavailable, "Runtime API closed", "ServiceUnavailable")
		return
	}
	req := <-slot // deliver sends at once after taking the slot
	if req == nil {
		writeAPIError(w, http.StatusServiceUnavailable, "execution environment gone", "ServiceUnavailable")
		return
	}
	h := w.Header()
	h.Set(HeaderRequestID, req.RequestID)
	h.Set(HeaderDeadlineMs, strconv.FormatInt(req.deadline.UnixMilli(), 10))
	h.Set(HeaderFunctionARN, req.FunctionARN)
	h.Set(HeaderTraceID, req.TraceID)
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(req.Payload)
}

func (a *RuntimeAPI) handleResponse(w http.ResponseWriter, r *http.Request) {
	req := a.take(r.PathValue("id"))
	if req == nil {
		writeAPIError(w, http.StatusBadRequest, "Invalid request ID", "InvalidRequestID")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxResponseSize+1))
	switch {
	case err != nil:
		req.done <- outcome{ferr: &FunctionError{Type: "Runtime.TruncatedResponse", Message: err.Error()}}
		writeAPIError(w, http.StatusBadRequest, err.Error(), "InvalidRequest")
		return
	case len(body) > MaxResponseSize:
		req.done <- outcome{ferr: &FunctionError{Type: "Function.ResponseSizeTooLarge",
			Message: fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", MaxResponseSize)}}
		writeAPIError(w, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("Exceeded maximum allowed payload size (%d bytes).", MaxResponseSize), "RequestEntityTooLarge")
		return
	}
	// A response that failed mid-body carries the error in trailers (aws-lambda-go's errorCapturingReader).
	if typ := r.Trailer.Get(trailerErrorType); typ != "" {
		fe := &FunctionError{Type: typ}
		if raw, err := base64.StdEncoding.DecodeString(r.Trailer.Get(trailerErrorBody)); err == nil {
			fe.Payload = raw
			_ = json.Unmarshal(raw, fe)
			fe.Type = typ
		}
		req.done <- outcome{ferr: fe}
	} else {
		req.done <- outcome{payload: body}
	}
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

func (a *RuntimeAPI) handleError(w http.ResponseWriter, r *http.Request) {
	req := a.take(r.PathValue("id"))
	if req == nil {
		writeAPIError(w, http.StatusBadRequest, "Invalid request ID", "InvalidRequestID")
		return
	}
	req.done <- outcome{ferr: readFunctionError(r, "Runtime.Unknown")}
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

func (a *RuntimeAPI) handleInitError(w http.ResponseWriter, r *http.Request) {
	fe := readFunctionError(r, "Runtime.InitError")
	a.mu.Lock()
	if a.initErr == nil {
		a.initErr = fe
	}
	a.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

// readFunctionError reads an error document ({"errorMessage", "errorType", "stackTrace"}); the
// Lambda-Runtime-Function-Error-Type header, when set, names the type.
func readFunctionError(r *http.Request, fallbackType string) *FunctionError {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxErrorSize))
	fe := &FunctionError{Payload: body}
	if err := json.Unmarshal(body, fe); err != nil {
		fe.Message = string(body)
	}
	if h := r.Header.Get(HeaderErrorType); h != "" && fe.Type == "" {
		fe.Type = h
	}
	if fe.Type == "" {
		fe.Type = fallbackType
	}
	return fe
}

func writeAPIError(w http.ResponseWriter, status int, msg, typ string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"errorMessage": msg, "errorType": typ})
	_, _ = w.Write(b)
}

// newRequestID returns a random UUID (version 4), the shape of a Lambda request ID.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// newTraceID returns an X-Ray trace header as Lambda passes it (not sampled).
func newTraceID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(),
		hex.EncodeToString(b[:12]), hex.EncodeToString(b[12:]))
}
