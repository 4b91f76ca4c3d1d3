package lambdaemu

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeRuntime speaks the Runtime API over HTTP the way a bootstrap does.
type fakeRuntime struct {
	t    *testing.T
	base string
}

func newFakeRuntime(t *testing.T, api *RuntimeAPI) *fakeRuntime {
	return &fakeRuntime{t: t, base: "http://" + api.Addr() + "/2018-06-01/runtime"}
}

func (r *fakeRuntime) next() (http.Header, []byte) {
	resp, err := http.Get(r.base + "/invocation/next")
	if err != nil {
		r.t.Error(err)
		return nil, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		r.t.Errorf("next: status %d", resp.StatusCode)
	}
	return resp.Header, body
}

func (r *fakeRuntime) post(path, body string) (int, string) {
	resp, err := http.Post(r.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		r.t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// runtimeDo runs fn (the runtime's side) in a goroutine; the test waits for it before it ends and
// before the API closes.
func runtimeDo(t *testing.T, fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	t.Cleanup(func() { <-done })
}

func newTestAPI(t *testing.T) *RuntimeAPI {
	t.Helper()
	api, err := NewRuntimeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	if !strings.HasPrefix(api.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr = %s, want 127.0.0.1:PORT", api.Addr())
	}
	return api
}

func TestRuntimeAPIResponse(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t)
	rt := newFakeRuntime(t, api)
	select {
	case <-api.Ready():
		t.Fatal("ready before the first /next")
	default:
	}
	done := make(chan struct{})
	var headers http.Header
	var got []byte
	runtimeDo(t, func() {
		defer close(done)
		headers, got = rt.next()
		id := headers.Get(HeaderRequestID)
		if code, _ := rt.post("/invocation/"+id+"/response", `{"ok":true}`); code != http.StatusAccepted {
			t.Errorf("response: status %d", code)
		}
		// A second answer for the same request is refused.
		if code, body := rt.post("/invocation/"+id+"/response", `{}`); code != http.StatusBadRequest ||
			!strings.Contains(body, "InvalidRequestID") {
			t.Errorf("second response: %d %s", code, body)
		}
	})
	before := time.Now()
	resp, err := api.Invoke(context.Background(), Invocation{
		Payload: []byte(`{"in":1}`), Timeout: 5 * time.Second, FunctionARN: "arn:aws:lambda:us-east-1:000000000000:function:f",
	})
	if err != nil {
		t.Fatal(err)
	}
	<-done
	<-api.Ready()
	if resp.Err != nil || string(resp.Payload) != `{"ok":true}` {
		t.Fatalf("response: %+v", resp)
	}
	if string(got) != `{"in":1}` {
		t.Fatalf("payload delivered: %s", got)
	}
	if headers.Get(HeaderRequestID) != resp.RequestID || len(resp.RequestID) != 36 {
		t.Errorf("request id header %q, response %q", headers.Get(HeaderRequestID), resp.RequestID)
	}
	if headers.Get(HeaderFunctionARN) != "arn:aws:lambda:us-east-1:000000000000:function:f" {
		t.Errorf("function arn header %q", headers.Get(HeaderFunctionARN))
	}
	if tr := headers.Get(HeaderTraceID); !strings.HasPrefix(tr, "Root=1-") || !strings.Contains(tr, ";Parent=") {
		t.Errorf("trace id header %q", tr)
	}
	ms, err := strconv.ParseInt(headers.Get(HeaderDeadlineMs), 10, 64)
	if err != nil {
		t.Fatalf("deadline header %q", headers.Get(HeaderDeadlineMs))
	}
	deadline := time.UnixMilli(ms)
	if deadline.Before(before.Add(5*time.Second-time.Millisecond)) || deadline.After(time.Now().Add(5*time.Second)) {
		t.Errorf("deadline %s not now+5s (invoked at %s)", deadline, before)
	}
	if !resp.Deadline.Truncate(time.Millisecond).Equal(deadline) {
		t.Errorf("Response.Deadline %s, header %s", resp.Deadline, deadline)
	}
}

func TestRuntimeAPIErrorResponse(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t)
	rt := newFakeRuntime(t, api)
	runtimeDo(t, func() {
		h, _ := rt.next()
		rt.post("/invocation/"+h.Get(HeaderRequestID)+"/error",
			`{"errorMessage":"boom","errorType":"errorString","stackTrace":[]}`)
	})
	resp, err := api.Invoke(context.Background(), Invocation{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Err == nil || resp.Err.Type != "errorString" || resp.Err.Message != "boom" || resp.Payload != nil {
		t.Fatalf("got %+v", resp)
	}
	if !strings.Contains(string(resp.Err.Payload), `"boom"`) {
		t.Errorf("raw error payload %s", resp.Err.Payload)
	}
}

func TestRuntimeAPIErrorTypeHeaderAndUnknownRequest(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t)
	rt := newFakeRuntime(t, api)
	if code, _ := rt.post("/invocation/nope/response", `{}`); code != http.StatusBadRequest {
		t.Errorf("unknown request id: status %d", code)
	}
	runtimeDo(t, func() {
		h, _ := rt.next()
		req, _ := http.NewRequest(http.MethodPost, rt.base+"/invocation/"+h.Get(HeaderRequestID)+"/error",
			strings.NewReader("not json"))
		req.Header.Set(HeaderErrorType, "Custom.Type")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	resp, err := api.Invoke(context.Background(), Invocation{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Err == nil || resp.Err.Type != "Custom.Type" || resp.Err.Message != "not json" {
		t.Fatalf("got %+v", resp.Err)
	}
}

func TestRuntimeAPITimeout(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t)
	rt := newFakeRuntime(t, api)
	ids := make(chan string, 1)
	runtimeDo(t, func() {
		h, _ := rt.next()
		ids <- h.Get(HeaderRequestID)
	})
	start := time.Now()
	resp, err := api.Invoke(context.Background(), Invocation{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Err == nil || resp.Err.Type != "Sandbox.Timedout" {
		t.Fatalf("got %+v", resp)
	}
	// The runtime never answers: only the 200ms timeout ends the
	// invocation, and 30s catches one it does not end.
	if el := time.Since(start); el < 200*time.Millisecond || el > 30*time.Second {
		t.Errorf("timed out after %s", el)
	}
	// A response after the deadline is refused.
	if code, _ := rt.post("/invocation/"+<-ids+"/response", `{}`); code != http.StatusBadRequest {
		t.Errorf("late response: status %d", code)
	}
}

func TestRuntimeAPIResponseTooLarge(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t)
	rt := newFakeRuntime(t, api)
	runtimeDo(t, func() {
		h, _ := rt.next()
		big := bytes.Repeat([]byte("x"), MaxResponseSize+1)
		resp, err := http.Post(rt.base+"/invocation/"+h.Get(HeaderRequestID)+"/response", "application/json", bytes.NewReader(big))
		if err == nil {
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("status %d", resp.StatusCode)
			}
			resp.Body.Close()
		}
	})
	// The subject is the size limit, not the timeout: posting 6 MB under
	// -race on a loaded machine took over 5 s, so the function's timeout is
	// one that holds on a machine many times slower.
	resp, err := api.Invoke(context.Background(), Invocation{Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Err == nil || resp.Err.Type != "Function.ResponseSizeTooLarge" {
		t.Fatalf("got %+v", resp.Err)
	}
}

func TestRuntimeAPIInitErrorAndContext(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t)
	rt := newFakeRuntime(t, api)
	code, _ := rt.post("/init/error", `{"errorMessage":"no config","errorType":"Runtime.InitError"}`)
	if code != http.StatusAccepted {
		t.Fatalf("init error: status %d", code)
	}
	if fe := api.InitError(); fe == nil || fe.Message != "no config" || fe.Type != "Runtime.InitError" {
		t.Fatalf("InitError = %+v", fe)
	}
	// Nobody polls: Invoke waits until its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := api.Invoke(ctx, Invocation{Timeout: time.Second}); err == nil {
		t.Fatal("Invoke without a runtime returned no error")
	}
	// Unknown routes are 404.
	resp, err := http.Get(rt.base + "/invocation/x/response")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET response route: %d", resp.StatusCode)
	}
	var doc map[string]string
	_, body := rt.post("/invocation/zzz/error", `{}`)
	if err := json.Unmarshal([]byte(body), &doc); err != nil || doc["errorType"] != "InvalidRequestID" {
		t.Errorf("unknown request error body %q", body)
	}
}
