package lambdaemu

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func newEchoFunction(t *testing.T, cfg FunctionConfig) *Function {
	t.Helper()
	cfg.Bootstrap = buildEcho(t)
	if cfg.Name == "" {
		cfg.Name = "echo"
	}
	cfg.Stderr = newLineWriter(t, "bootstrap: ")
	fn, err := NewFunction(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fn.Close() })
	return fn
}

func invoke(t *testing.T, fn *Function, bodies ...string) *Response {
	t.Helper()
	resp, err := fn.Invoke(context.Background(), sqsPayload(t, bodies...))
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	return resp
}

func decodeEcho(t *testing.T, resp *Response) echoReply {
	t.Helper()
	if resp.Err != nil {
		t.Fatalf("function error: %v", resp.Err)
	}
	var r echoReply
	if err := json.Unmarshal(resp.Payload, &r); err != nil {
		t.Fatalf("response %s: %v", resp.Payload, err)
	}
	return r
}

func TestFunctionSuccessWarmReuseAndEnvironment(t *testing.T) {
	t.Parallel()
	fn := newEchoFunction(t, FunctionConfig{
		Timeout:    5 * time.Second,
		MemorySize: 256,
		LogFormat:  "JSON",
		Env:        map[string]string{"SKEIN_TABLE": "events"},
	})
	before := time.Now()
	first := invoke(t, fn, "ok", "fail")
	r := decodeEcho(t, first)
	if !first.Cold || first.InitDuration <= 0 {
		t.Errorf("first invocation: Cold=%v InitDuration=%s", first.Cold, first.InitDuration)
	}
	if r.Echo.RequestID != first.RequestID || r.Echo.FunctionARN != fn.ARN() ||
		fn.ARN() != "arn:aws:lambda:us-east-1:000000000000:function:echo" {
		t.Errorf("context: request %q (want %q), arn %q", r.Echo.RequestID, first.RequestID, r.Echo.FunctionARN)
	}
	deadline := time.UnixMilli(r.Echo.DeadlineMs)
	if deadline.Before(before.Add(5*time.Second-time.Millisecond)) || deadline.After(time.Now().Add(5*time.Second)) {
		t.Errorf("ctx deadline %s is not delivery + 5s (invoked at %s)", deadline, before)
	}
	if !strings.HasPrefix(r.Echo.TraceID, "Root=1-") {
		t.Errorf("_X_AMZN_TRACE_ID = %q", r.Echo.TraceID)
	}
	if len(r.BatchItemFailures) != 1 || r.BatchItemFailures[0].ItemIdentifier != "m2" {
		t.Errorf("batchItemFailures = %+v", r.BatchItemFailures)
	}
	for k, v := range map[string]string{
		"AWS_LAMBDA_FUNCTION_NAME":        "echo",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     "5",
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_LOG_FORMAT":           "JSON",
		"AWS_REGION":                      "us-east-1",
		"_HANDLER":                        "bootstrap",
		"SKEIN_TABLE":                     "events",
	} {
		if got := r.Echo.Env[k]; got != v {
			t.Errorf("env %s = %q, want %q", k, got, v)
		}
	}
	if api := r.Echo.Env["AWS_LAMBDA_RUNTIME_API"]; !strings.HasPrefix(api, "127.0.0.1:") {
		t.Errorf("AWS_LAMBDA_RUNTIME_API = %q", api)
	}

	second := invoke(t, fn, "ok")
	r2 := decodeEcho(t, second)
	if second.Cold || r2.Echo.PID != r.Echo.PID || r2.Echo.Invocations != 2 {
		t.Errorf("second invocation not warm: cold=%v pid %d->%d invocations=%d", second.Cold, r.Echo.PID, r2.Echo.PID, r2.Echo.Invocations)
	}
	if second.RequestID == first.RequestID {
		t.Error("request IDs repeat")
	}
	st := fn.Stats()
	if st.ColdStarts != 1 || st.Invocations != 2 {
		t.Errorf("stats %+v", st)
	}
	t.Logf("cold start (process start -> first /next): %s; first invocation %s, warm invocation %s",
		first.InitDuration, first.Duration, second.Duration)
}

func TestFunctionErrorKeepsTheProcess(t *testing.T) {
	t.Parallel()
	fn := newEchoFunction(t, FunctionConfig{Timeout: 5 * time.Second})
	pid := decodeEcho(t, invoke(t, fn, "ok")).Echo.PID
	resp := invoke(t, fn, "error")
	if resp.Err == nil || resp.Err.Type != "errorString" || resp.Err.Message != "echo: told to fail the invocation" {
		t.Fatalf("got %+v", resp.Err)
	}
	after := invoke(t, fn, "ok")
	if r := decodeEcho(t, after); after.Cold || r.Echo.PID != pid {
		t.Errorf("a returned error must not restart the process (cold=%v)", after.Cold)
	}
}

func TestFunctionPanicReportsAndRestarts(t *testing.T) {
	t.Parallel()
	fn := newEchoFunction(t, FunctionConfig{Timeout: 5 * time.Second})
	pid := decodeEcho(t, invoke(t, fn, "ok")).Echo.PID
	resp := invoke(t, fn, "panic")
	if resp.Err == nil || !strings.Contains(resp.Err.Message, "told to panic") {
		t.Fatalf("got %+v", resp.Err)
	}
	// aws-lambda-go exits after reporting a panic: the next invocation is a cold start.
	after := invoke(t, fn, "ok")
	if r := decodeEcho(t, after); !after.Cold || r.Echo.PID == pid || r.Echo.Invocations != 1 {
		t.Errorf("after a panic: cold=%v pid %d->%d", after.Cold, pid, r.Echo.PID)
	}
}

func TestFunctionTimeoutKillsAndNextInvokeIsCold(t *testing.T) {
	t.Parallel()
	fn := newEchoFunction(t, FunctionConfig{Timeout: time.Second})
	pid := decodeEcho(t, invoke(t, fn, "ok")).Echo.PID
	// The handler sleeps for a minute: an invocation that ends within
	// half of it was ended by the 1s timeout, however busy the machine.
	start := time.Now()
	resp := invoke(t, fn, "sleep 60s")
	el := time.Since(start)
	if resp.Err == nil || resp.Err.Type != "Sandbox.Timedout" || !strings.Contains(resp.Err.Message, "Task timed out after 1.00 seconds") {
		t.Fatalf("got %+v", resp.Err)
	}
	if el < time.Second || el > 30*time.Second {
		t.Errorf("timed out after %s, want about 1s", el)
	}
	if p, err := os.FindProcess(pid); err == nil && p.Signal(syscall.Signal(0)) == nil {
		t.Errorf("process %d still alive after the timeout", pid)
	}
	if fn.PID() != 0 {
		t.Errorf("PID = %d after a timeout, want 0", fn.PID())
	}
	after := invoke(t, fn, "ok")
	if r := decodeEcho(t, after); !after.Cold || r.Echo.PID == pid {
		t.Errorf("after a timeout: cold=%v pid %d->%d", after.Cold, pid, r.Echo.PID)
	}
	if st := fn.Stats(); st.Timeouts != 1 || st.ColdStarts != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestFunctionSIGKILLMidInvoke(t *testing.T) {
	t.Parallel()
	fn := newEchoFunction(t, FunctionConfig{Timeout: 30 * time.Second})
	type result struct {
		resp *Response
		err  error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		resp, err := fn.Invoke(context.Background(), sqsPayload(t, "sleep 20s"))
		done <- result{resp, err}
	}()
	for fn.InFlight() == "" {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the invocation never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // inside the handler's sleep
	if err := fn.Kill(); err != nil {
		t.Fatal(err)
	}
	// The handler sleeps for 20s: an invocation that ends within 15s of
	// the kill was ended by it, however busy the machine.
	killed := time.Now()
	var res result
	select {
	case res = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the killed invocation did not end within 15s")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.resp.Err == nil || res.resp.Err.Type != "Runtime.ExitError" || !strings.Contains(res.resp.Err.Message, "signal: killed") {
		t.Fatalf("got %+v after %s", res.resp.Err, time.Since(killed))
	}
	after := invoke(t, fn, "ok")
	if decodeEcho(t, after); !after.Cold {
		t.Error("the invocation after a kill was not a cold start")
	}
	if st := fn.Stats(); st.Crashes != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestFunctionExitMidInvoke(t *testing.T) {
	t.Parallel()
	fn := newEchoFunction(t, FunctionConfig{Timeout: 5 * time.Second})
	resp := invoke(t, fn, "exit")
	if resp.Err == nil || resp.Err.Type != "Runtime.ExitError" || !strings.Contains(resp.Err.Message, "exit status 3") {
		t.Fatalf("got %+v", resp.Err)
	}
	decodeEcho(t, invoke(t, fn, "ok"))
}

func TestFunctionInitFailures(t *testing.T) {
	t.Parallel()
	t.Run("exit during init", func(t *testing.T) {
		t.Parallel()
		fn := newEchoFunction(t, FunctionConfig{Env: map[string]string{"ECHO_INIT_EXIT": "1"}})
		resp := invoke(t, fn, "ok")
		if resp.Err == nil || resp.Err.Type != "Runtime.ExitError" || !strings.Contains(resp.Err.Message, "exit status 2") || !resp.Cold {
			t.Fatalf("got %+v", resp)
		}
		if st := fn.Stats(); st.InitFailures != 1 || st.Invocations != 0 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("init timeout", func(t *testing.T) {
		t.Parallel()
		// Init sleeps for a minute: an invocation that ends within half of
		// it was ended by the 300ms InitTimeout, however busy the machine.
		fn := newEchoFunction(t, FunctionConfig{InitTimeout: 300 * time.Millisecond, Env: map[string]string{"ECHO_INIT_SLEEP": "60s"}})
		start := time.Now()
		resp := invoke(t, fn, "ok")
		if el := time.Since(start); resp.Err == nil || resp.Err.Type != "Sandbox.Timedout" || el < 300*time.Millisecond || el > 30*time.Second {
			t.Fatalf("got %+v after %s", resp.Err, el)
		}
	})
	t.Run("init time is not billed to the deadline", func(t *testing.T) {
		t.Parallel()
		// 5.5 s of init plus 1 s of work would overrun a 6 s deadline that
		// counted init (sleeps only ever last longer on a busy machine);
		// the work alone leaves 5 s to spare.
		fn := newEchoFunction(t, FunctionConfig{Timeout: 6 * time.Second, Env: map[string]string{"ECHO_INIT_SLEEP": "5500ms"}})
		resp := invoke(t, fn, "sleep 1s")
		decodeEcho(t, resp)
		if resp.InitDuration < 5500*time.Millisecond {
			t.Errorf("InitDuration = %s, want >= 5.5s", resp.InitDuration)
		}
	})
}

func TestFunctionContextCancelKillsTheProcess(t *testing.T) {
	t.Parallel()
	fn := newEchoFunction(t, FunctionConfig{Timeout: 30 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := fn.Invoke(ctx, sqsPayload(t, "sleep 20s")); err == nil {
		t.Fatal("no error from a cancelled invocation")
	}
	if fn.PID() != 0 {
		t.Error("the process survived a cancelled invocation")
	}
	decodeEcho(t, invoke(t, fn, "ok"))
	fn.Close()
	if _, err := fn.Invoke(context.Background(), sqsPayload(t, "ok")); err != ErrClosed {
		t.Errorf("Invoke after Close: %v", err)
	}
}

// TestColdStart measures Lambda's Init Duration for the echo bootstrap: process start to its first
// GET /next, and the whole first invocation.
func TestColdStart(t *testing.T) {
	fn := newEchoFunction(t, FunctionConfig{Timeout: 5 * time.Second})
	var inits, firsts []time.Duration
	for range 10 {
		start := time.Now()
		resp := invoke(t, fn, "ok")
		decodeEcho(t, resp)
		if !resp.Cold {
			t.Fatal("not a cold start")
		}
		firsts = append(firsts, time.Since(start))
		inits = append(inits, resp.InitDuration)
		if err := fn.Kill(); err != nil { // the next invocation finds the process dead: a cold start
			t.Fatal(err)
		}
	}
	slices.Sort(inits)
	slices.Sort(firsts)
	t.Logf("cold start over %d runs: init (process start -> first /next) median %s, min %s, max %s; "+
		"start to first response median %s, max %s",
		len(inits), inits[len(inits)/2], inits[0], inits[len(inits)-1], firsts[len(firsts)/2], firsts[len(firsts)-1])
}

// The CA bundle reaches the bootstrap only when some AWS endpoint uses TLS.
func TestTalksTLS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, true}, // AWS itself
		{map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}, false},
		{map[string]string{"AWS_ENDPOINT_URL": "https://localhost.localstack.cloud:4566"}, true},
		{map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000", "AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9324"}, true}, // S3 goes to AWS
		{map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://a", "AWS_ENDPOINT_URL_SQS": "http://b", "AWS_ENDPOINT_URL_S3": "http://c"}, false},
		{map[string]string{"AWS_ENDPOINT_URL": "http://a", "AWS_ENDPOINT_URL_S3": "HTTPS://c"}, true},
	} {
		if got := talksTLS(tc.env); got != tc.want {
			t.Errorf("talksTLS(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
}
