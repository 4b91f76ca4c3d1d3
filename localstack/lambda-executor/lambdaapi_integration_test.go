//go:build integration

package lambdaexecutor_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// lambdaAPI calls LocalStack's Lambda REST API (2015-03-31) signed with
// SigV4: the module does not depend on the SDK's Lambda client, and the
// test needs five operations.
type lambdaAPI struct {
	endpoint string
	cfg      aws.Config
	client   *http.Client
}

// apiError is a non-2xx answer.
type apiError struct {
	Status int
	Body   string
}

func (e *apiError) Error() string { return fmt.Sprintf("lambda API: HTTP %d: %s", e.Status, e.Body) }

func (l *lambdaAPI) do(ctx context.Context, method, path string, in any) (http.Header, []byte, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, nil, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, l.endpoint+path, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	creds, err := l.cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, nil, err
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "lambda", l.cfg.Region, time.Now()); err != nil {
		return nil, nil, err
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.Header, out, &apiError{resp.StatusCode, string(out)}
	}
	return resp.Header, out, nil
}

type functionSpec struct {
	Name     string
	Zip      []byte
	Arch     string // "arm64" or "x86_64"
	Timeout  int
	MemoryMB int
	Env      map[string]string
}

// createFunction creates the function, waits until it is Active and
// deletes it when the test ends; it returns the time to Active.
func (l *lambdaAPI) createFunction(t *testing.T, s functionSpec) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	_, _, err := l.do(ctx, http.MethodPost, "/2015-03-31/functions", map[string]any{
		"FunctionName":  s.Name,
		"Runtime":       "provided.al2023",
		"Role":          "arn:aws:iam::000000000000:role/skein-executor-test",
		"Handler":       "bootstrap",
		"Code":          map[string]any{"ZipFile": s.Zip},
		"Architectures": []string{s.Arch},
		"Timeout":       s.Timeout,
		"MemorySize":    s.MemoryMB,
		"Environment":   map[string]any{"Variables": s.Env},
	})
	if err != nil {
		t.Fatalf("CreateFunction %s: %v", s.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, _, err := l.do(ctx, http.MethodDelete, "/2015-03-31/functions/"+url.PathEscape(s.Name), nil); err != nil {
			t.Logf("DeleteFunction %s: %v", s.Name, err)
		}
	})
	for {
		_, body, err := l.do(ctx, http.MethodGet, "/2015-03-31/functions/"+url.PathEscape(s.Name), nil)
		if err != nil {
			t.Fatalf("GetFunction %s: %v", s.Name, err)
		}
		var fn struct {
			Configuration struct{ State, StateReason string }
		}
		if err := json.Unmarshal(body, &fn); err != nil {
			t.Fatalf("GetFunction %s: %v", s.Name, err)
		}
		switch fn.Configuration.State {
		case "Active":
			return time.Since(start)
		case "Failed":
			t.Fatalf("function %s failed: %s", s.Name, fn.Configuration.StateReason)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("function %s: still %s: %v", s.Name, fn.Configuration.State, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// invokeResult is a synchronous invocation's answer.
type invokeResult struct {
	FunctionError string // X-Amz-Function-Error: "Unhandled" for an error
	Payload       []byte
	Took          time.Duration
}

func (l *lambdaAPI) invoke(t *testing.T, name string, payload []byte) invokeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	hdr, body, err := l.do(ctx, http.MethodPost, "/2015-03-31/functions/"+url.PathEscape(name)+"/invocations", json.RawMessage(payload))
	if err != nil {
		t.Fatalf("Invoke %s: %v", name, err)
	}
	return invokeResult{FunctionError: hdr.Get("X-Amz-Function-Error"), Payload: body, Took: time.Since(start)}
}

// mapQueue maps the queue to the function (LocalStack's own SQS event
// source mapping), waits until it is Enabled and deletes it when the test
// ends.
func (l *lambdaAPI) mapQueue(t *testing.T, queueARN, function string, batch, windowSec int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, body, err := l.do(ctx, http.MethodPost, "/2015-03-31/event-source-mappings/", map[string]any{
		"EventSourceArn":                 queueARN,
		"FunctionName":                   function,
		"BatchSize":                      batch,
		"MaximumBatchingWindowInSeconds": windowSec,
		"FunctionResponseTypes":          []string{"ReportBatchItemFailures"},
		"Enabled":                        true,
	})
	if err != nil {
		t.Fatalf("CreateEventSourceMapping: %v", err)
	}
	var m struct{ UUID, State string }
	if err := json.Unmarshal(body, &m); err != nil || m.UUID == "" {
		t.Fatalf("CreateEventSourceMapping: %s (%v)", body, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, _, err := l.do(ctx, http.MethodDelete, "/2015-03-31/event-source-mappings/"+m.UUID, nil); err != nil {
			t.Logf("DeleteEventSourceMapping: %v", err)
		}
	})
	for m.State != "Enabled" {
		select {
		case <-ctx.Done():
			t.Fatalf("event source mapping still %s: %v", m.State, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if _, body, err = l.do(ctx, http.MethodGet, "/2015-03-31/event-source-mappings/"+m.UUID, nil); err != nil {
			t.Fatalf("GetEventSourceMapping: %v", err)
		}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("GetEventSourceMapping: %v", err)
		}
	}
}

// buildZip builds the Go package pkg for linux/goarch as sam build does
// (CGO off, -tags lambda.norpc, the binary named bootstrap) and returns the
// deployment package.
func buildZip(dir, pkg, goarch string) ([]byte, error) {
	out := filepath.Join(dir, goarch, filepath.Base(pkg), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(bin); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
