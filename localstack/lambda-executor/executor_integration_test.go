//go:build integration

// Package lambdaexecutor_test tests the skein-local Lambda executor plugin
// (a Python package beside this file) inside a running LocalStack: functions
// built from examples/lambda as sam build builds them (arm64, run under
// qemu-aarch64 on other machines) are created, invoked and driven by
// LocalStack's own SQS event source mapping.
//
//	SKEIN_LOCALSTACK=1 AWS_ENDPOINT_URL=http://127.0.0.1:4566 \
//	  go test -tags integration -count=1 -v ./localstack/lambda-executor/
//
// LocalStack must run with LAMBDA_RUNTIME_EXECUTOR=skein-local (README.md).
// Without SKEIN_LOCALSTACK=1 the tests skip; SKEIN_REQUIRE_LOCALSTACK=1
// makes that a failure.
package lambdaexecutor_test

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/world"
)

var names = world.NewIDSource(nil, nil)

// env is what every test needs: the API clients and the built functions.
type env struct {
	lambda   *lambdaAPI
	clients  dynamoworld.Clients
	flowZip  []byte // examples/lambda, linux/arm64 (or SKEIN_LOCALSTACK_FLOW_ARCH)
	flowArch string // its Lambda architecture
	probe    []byte // testdata/probe, the host's architecture
}

var shared struct {
	once sync.Once
	env  *env
	err  error
}

func setup(t *testing.T) *env {
	t.Helper()
	endpoint := os.Getenv("AWS_ENDPOINT_URL")
	if os.Getenv("SKEIN_LOCALSTACK") != "1" || endpoint == "" {
		const why = "SKEIN_LOCALSTACK=1 and AWS_ENDPOINT_URL (a LocalStack running the skein-local executor) are not set"
		if os.Getenv("SKEIN_REQUIRE_LOCALSTACK") == "1" {
			t.Fatal(why + "; SKEIN_REQUIRE_LOCALSTACK=1 forbids skipping")
		}
		t.Skip(why)
	}
	shared.once.Do(func() {
		shared.env, shared.err = newEnv(endpoint)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.env
}

func newEnv(endpoint string) (*env, error) {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	dir, err := os.MkdirTemp("", "skein-executor-test-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	e := &env{
		lambda:  &lambdaAPI{endpoint: strings.TrimRight(endpoint, "/"), cfg: cfg, client: &http.Client{Timeout: 5 * time.Minute}},
		clients: dynamoworld.NewClients(cfg, dynamoworld.ClientOptions{S3PathStyle: true, Emulator: true}),
	}
	// arm64, as template.yaml deploys it; SKEIN_LOCALSTACK_FLOW_ARCH=amd64 measures it native.
	goarch := cmp.Or(os.Getenv("SKEIN_LOCALSTACK_FLOW_ARCH"), "arm64")
	e.flowArch = lambdaArch(goarch)
	if e.flowZip, err = buildZip(dir, "github.com/skeinflow/skein/examples/lambda", goarch); err != nil {
		return nil, err
	}
	if e.probe, err = buildZip(dir, "github.com/skeinflow/skein/localstack/lambda-executor/testdata/probe", runtime.GOARCH); err != nil {
		return nil, err
	}
	return e, nil
}

func lambdaArch(goarch string) string {
	if goarch == "amd64" {
		return "x86_64"
	}
	return goarch
}

// resources creates a table, queue and bucket for the flow function and
// returns the function's environment.
func (e *env) resources(t *testing.T) (dynamoworld.Resources, map[string]string) {
	t.Helper()
	id := strings.ToLower(names.New(""))
	r := dynamoworld.Resources{Table: "skein-" + id, Queue: "skein-" + id, Bucket: "skein-" + id}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queueURL, err := dynamoworld.CreateResources(ctx, e.clients, r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := dynamoworld.DeleteResources(ctx, e.clients, r, queueURL); err != nil {
			t.Logf("deleting resources: %v", err)
		}
	})
	return r, map[string]string{
		"SKEIN_HANDLER":            "flow",
		"SKEIN_TABLE":              r.Table,
		"SKEIN_QUEUE_URL":          queueURL,
		"SKEIN_BUCKET":             r.Bucket,
		"SKEIN_S3_PATH_STYLE":      "1",
		"SKEIN_TIME_BUDGET_MARGIN": "2s",
	}
}

// TestInvoke: the project's flow function (arm64) answers an empty batch,
// reports a handler error as FunctionError Unhandled, and a function whose
// init fails answers Runtime.ExitError.
func TestInvoke(t *testing.T) {
	e := setup(t)
	_, fnEnv := e.resources(t)
	name := "skein-invoke-" + strings.ToLower(names.New(""))
	active := e.lambda.createFunction(t, functionSpec{Name: name, Zip: e.flowZip, Arch: e.flowArch, Timeout: 30, MemoryMB: 512, Env: fnEnv})

	cold := e.lambda.invoke(t, name, []byte(`{"Records":[]}`))
	if cold.FunctionError != "" || string(cold.Payload) != `{"batchItemFailures":null}` {
		t.Fatalf("empty batch: FunctionError %q, payload %s", cold.FunctionError, cold.Payload)
	}
	var warm []time.Duration
	for range 30 {
		r := e.lambda.invoke(t, name, []byte(`{"Records":[]}`))
		if r.FunctionError != "" {
			t.Fatalf("warm invoke: FunctionError %q: %s", r.FunctionError, r.Payload)
		}
		warm = append(warm, r.Took)
	}
	slices.Sort(warm)
	t.Logf("create to Active %v; cold invoke %v; warm p50 %v, max %v (%s)",
		active.Round(time.Millisecond), cold.Took.Round(time.Millisecond), warm[len(warm)/2].Round(100*time.Microsecond), warm[len(warm)-1].Round(time.Millisecond), e.flowArch)

	bad := e.lambda.invoke(t, name, []byte(`"not an SQS event"`))
	var doc struct{ ErrorType, ErrorMessage string }
	if err := json.Unmarshal(bad.Payload, &doc); err != nil || bad.FunctionError != "Unhandled" || doc.ErrorType != "UnmarshalTypeError" {
		t.Fatalf("handler error: FunctionError %q, payload %s (%v)", bad.FunctionError, bad.Payload, err)
	}

	broken := "skein-initfail-" + strings.ToLower(names.New(""))
	fnEnv["SKEIN_HANDLER"] = "no-such-handler"
	e.lambda.createFunction(t, functionSpec{Name: broken, Zip: e.flowZip, Arch: e.flowArch, Timeout: 30, MemoryMB: 512, Env: fnEnv})
	r := e.lambda.invoke(t, broken, []byte(`{"Records":[]}`))
	if err := json.Unmarshal(r.Payload, &doc); err != nil || r.FunctionError != "Unhandled" || doc.ErrorType != "Runtime.ExitError" {
		t.Fatalf("init failure: FunctionError %q, payload %s (%v)", r.FunctionError, r.Payload, err)
	}
}

// TestWebhookInvoke: the project's webhook function answers Function URL
// events through LocalStack's invoke path: a GET is refused (405) and a
// POST to a token no hook holds is 404.
func TestWebhookInvoke(t *testing.T) {
	e := setup(t)
	_, fnEnv := e.resources(t)
	fnEnv["SKEIN_HANDLER"] = "webhook"
	name := "skein-webhook-" + strings.ToLower(names.New(""))
	e.lambda.createFunction(t, functionSpec{Name: name, Zip: e.flowZip, Arch: e.flowArch, Timeout: 30, MemoryMB: 512, Env: fnEnv})
	for _, c := range []struct {
		method string
		want   int
	}{{"GET", 405}, {"POST", 404}} {
		var ev events.LambdaFunctionURLRequest
		ev.RawPath, ev.Body = "/hooks/no-such-token", `{"by":"test"}`
		ev.RequestContext.HTTP.Method, ev.RequestContext.HTTP.Path = c.method, ev.RawPath
		payload, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		r := e.lambda.invoke(t, name, payload)
		var resp events.LambdaFunctionURLResponse
		if err := json.Unmarshal(r.Payload, &resp); err != nil || r.FunctionError != "" || resp.StatusCode != c.want {
			t.Errorf("%s: FunctionError %q, payload %s (%v); want status %d", c.method, r.FunctionError, r.Payload, err, c.want)
		}
	}
}

// TestTimeout: an invocation that outlives the function's timeout is
// killed and answers Sandbox.Timedout; the next one runs in a new process.
func TestTimeout(t *testing.T) {
	e := setup(t)
	name := "skein-timeout-" + strings.ToLower(names.New(""))
	e.lambda.createFunction(t, functionSpec{Name: name, Zip: e.probe, Arch: lambdaArch(runtime.GOARCH), Timeout: 1, MemoryMB: 128})

	r := e.lambda.invoke(t, name, []byte(`{"sleepMs":120000}`))
	var doc struct{ ErrorType, ErrorMessage string }
	if err := json.Unmarshal(r.Payload, &doc); err != nil || r.FunctionError != "Unhandled" || doc.ErrorType != "Sandbox.Timedout" ||
		!strings.Contains(doc.ErrorMessage, "Task timed out after 1.00 seconds") {
		t.Fatalf("timeout: FunctionError %q, payload %s (%v)", r.FunctionError, r.Payload, err)
	}
	if r.Took > time.Minute {
		t.Fatalf("the timed-out invocation answered after %v: the timeout was not enforced", r.Took)
	}
	ok := e.lambda.invoke(t, name, []byte(`{"sleepMs":0}`))
	if ok.FunctionError != "" || string(ok.Payload) != `"slept"` {
		t.Fatalf("after the timeout: FunctionError %q, payload %s", ok.FunctionError, ok.Payload)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.env != nil {
		shared.env.lambda.client.CloseIdleConnections()
	}
	os.Exit(code)
}
