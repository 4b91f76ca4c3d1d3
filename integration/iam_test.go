//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/lambdaemu"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// The emulators enforce no IAM, so a code path that needs an action its
// function's role lacks passes every other test and fails only on AWS.
// TestIAMLeastPrivilege routes each function's AWS traffic (the bootstrap
// processes lambdaemu starts, and for the flow function the event source
// mapping's polling, which Lambda does with the function's role) through
// recording proxies, decodes every request into the IAM actions AWS would
// authorise (iamcheck.go), drives scenarios through both functions' code
// paths, and evaluates each action against the function's role in
// template.yaml (SKEIN_IAM_TEMPLATE names another template for the roles:
// a scratch copy, to see the check fail).

// iamEndpointVars name each service's endpoint in the environment.
var iamEndpointVars = map[string]string{
	"dynamodb": "AWS_ENDPOINT_URL_DYNAMODB", "sqs": "AWS_ENDPOINT_URL_SQS", "s3": "AWS_ENDPOINT_URL_S3",
}

// iamCall is one recorded request.
type iamCall struct {
	service, origin string // origin: "function" or "esm"
	method, path    string
	query           url.Values
	header          http.Header
	body            []byte // DynamoDB, SQS, and S3 POSTs only
}

func (c iamCall) String() string {
	s := c.method + " " + c.path
	if len(c.query) > 0 {
		s += "?" + c.query.Encode()
	}
	if t := c.header.Get("X-Amz-Target"); t != "" {
		s += " X-Amz-Target: " + t
	}
	if c.service != "s3" && len(c.body) > 0 {
		b := string(c.body)
		if len(b) > 300 {
			b = b[:300] + "..."
		}
		s += " " + b
	}
	return c.service + " (" + c.origin + "): " + s
}

// iamRecorder records one function's requests in one stack.
type iamRecorder struct {
	mu    sync.Mutex
	calls []iamCall
	urls  map[string]string // service -> proxy URL
	esm   string            // the SQS proxy for the ESM's requests
}

func newIAMRecorder(t *testing.T) *iamRecorder {
	t.Helper()
	rec := &iamRecorder{urls: map[string]string{}}
	for svc, env := range iamEndpointVars {
		target := os.Getenv(env)
		if target == "" {
			// On AWS itself IAM is enforced: nothing to check offline.
			t.Skipf("%s is not set: the IAM check runs on the emulators", env)
		}
		rec.urls[svc] = rec.proxy(t, svc, "function", target)
	}
	rec.esm = rec.proxy(t, "sqs", "esm", os.Getenv(iamEndpointVars["sqs"]))
	return rec
}

func (rec *iamRecorder) proxy(t *testing.T, svc, origin, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := iamCall{service: svc, origin: origin, method: r.Method, path: r.URL.EscapedPath(), query: r.URL.Query(), header: r.Header.Clone()}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if svc != "s3" || r.Method == http.MethodPost {
			c.body = body
		}
		rec.mu.Lock()
		rec.calls = append(rec.calls, c)
		rec.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (rec *iamRecorder) snapshot() []iamCall {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.calls)
}

// route points a function's endpoints at the recorder's proxies.
func (rec *iamRecorder) route(fc *lambdaemu.FunctionConfig) {
	for svc, env := range iamEndpointVars {
		fc.Env[env] = rec.urls[svc]
	}
}

// esmSQS is the ESM's client: its polling and deleting go through the flow
// function's proxy (Lambda does them with the function's role); the queue
// depth Drain reads is the test's, sent directly.
type esmSQS struct{ polling, direct *sqs.Client }

func (c esmSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, o ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return c.polling.ReceiveMessage(ctx, in, o...)
}

func (c esmSQS) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, o ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	return c.polling.DeleteMessageBatch(ctx, in, o...)
}

func (c esmSQS) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, o ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return c.direct.GetQueueAttributes(ctx, in, o...)
}

// iamStack is a stack whose flow function (and ESM) and webhook function
// send their AWS requests through recorders.
type iamStack struct {
	*stack
	name          string
	flow, webhook *iamRecorder
	wh            *lambdaemu.Function
	whMu          sync.Mutex // one invocation at a time
	whLogs        *logBuffer // the webhook function's output
	tokens        []string   // the live tokens sent to it (under whMu)
	client        *client.Client
}

// newIAMStack starts a stack on bin (the flow function) and the real
// bootstrap (the webhook function), with reg for the test's client.
func newIAMStack(t *testing.T, name, bin string, reg *workflow.Registry) *iamStack {
	t.Helper()
	s := &iamStack{stack: newStack(t, stackOptions{NoESM: true}), name: name, flow: newIAMRecorder(t), webhook: newIAMRecorder(t)}
	// InlineConcurrency 4, so that a fan-out of 20 goes through SQS.
	s.fc.Env["SKEIN_INLINE_CONCURRENCY"] = "4"
	s.fc.Bootstrap = bin
	s.flow.route(&s.fc)
	polling := sqs.New(s.clients.SQS.Options(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(s.flow.esm) })
	var err error
	s.esm, err = lambdaemu.NewESM(lambdaemu.ESMConfig{
		Mapping: s.mapping, SQS: esmSQS{polling: polling, direct: s.clients.SQS}, QueueURL: s.queues.URL, QueueARN: s.queues.ARN,
		Function: s.fc, PollWait: time.Second, OnBatch: s.batches.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.esm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	s.whLogs = logs
	cfg := s.webhookConfig()
	s.webhook.route(&cfg)
	cfg.Stdout, cfg.Stderr = logs, logs
	if s.wh, err = lambdaemu.NewFunction(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.wh.Close()
		if t.Failed() {
			t.Logf("%s: webhook function output:\n%s", name, logs.String())
		}
	})
	if s.client, err = client.New(client.Config{World: s.world, Registry: reg}, knobs.WithResultPoll(50*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	return s
}

// token waits for the run's webhook and returns its token.
func (s *iamStack) token(t *testing.T, runID string) string {
	t.Helper()
	for limit := time.Now().Add(5 * time.Minute); ; {
		p, err := s.world.ListHooks(context.Background(), &world.ListHooksParams{RunID: runID})
		if err != nil {
			t.Error(err)
			return ""
		}
		if len(p.Items) > 0 {
			return p.Items[0].Token
		}
		if time.Now().After(limit) {
			t.Error("the run created no webhook")
			return ""
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// callWebhook POSTs body to token's webhook as a Function URL request.
func (s *iamStack) callWebhook(t *testing.T, token, body string) events.LambdaFunctionURLResponse {
	t.Helper()
	return s.callWebhookMethod(t, http.MethodPost, token, body)
}

// callWebhookMethod invokes the webhook function with a Function URL request.
func (s *iamStack) callWebhookMethod(t *testing.T, method, token, body string) events.LambdaFunctionURLResponse {
	t.Helper()
	path := workflow.WebhookPath + token
	payload, err := json.Marshal(events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: path, Headers: map[string]string{"content-type": "text/plain"},
		RequestContext: events.LambdaFunctionURLRequestContext{
			DomainName: "abcdef.lambda-url.us-east-1.on.aws",
			HTTP:       events.LambdaFunctionURLRequestContextHTTPDescription{Method: method, Path: path},
		},
		Body: body,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.whMu.Lock()
	s.tokens = append(s.tokens, token)
	r, err := s.wh.Invoke(context.Background(), payload)
	s.whMu.Unlock()
	var resp events.LambdaFunctionURLResponse
	switch {
	case err != nil:
		t.Errorf("webhook invoke: %v", err)
	case r.Err != nil:
		t.Errorf("webhook function error: %+v", r.Err)
	default:
		if err := json.Unmarshal(r.Payload, &resp); err != nil {
			t.Errorf("webhook response %s: %v", r.Payload, err)
		}
	}
	return resp
}

// waitFor waits for a run to end with status want.
func (s *iamStack) waitFor(t *testing.T, runID string, want world.RunStatus) bool {
	t.Helper()
	for limit := time.Now().Add(5 * time.Minute); ; {
		info, err := s.client.GetRun(context.Background(), runID)
		if err != nil {
			t.Error(err)
			return false
		}
		if info.Status.Terminal() {
			if info.Status != want {
				t.Errorf("run %s ended %s, want %s", runID, info.Status, want)
				return false
			}
			return true
		}
		if time.Now().After(limit) {
			t.Errorf("run %s is still %s", runID, info.Status)
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// result waits for a run to complete and checks its result.
func result[O any](t *testing.T, s *iamStack, run *client.Run[O], check func(O) bool) {
	t.Helper()
	if !s.waitFor(t, run.ID(), world.RunStatusCompleted) {
		return
	}
	out, err := run.Result(context.Background())
	if err != nil || !check(out) {
		t.Errorf("run %s: %v, %v", run.ID(), out, err)
	}
}

// TestIAMLeastPrivilege: every AWS request each function makes (and the
// flow function's event source mapping) in scenarios covering their code
// paths is allowed by the function's role in template.yaml.
func TestIAMLeastPrivilege(t *testing.T) {
	dynamotest.Require(t)
	bin := bootstrap(t)
	reg, err := demo.Registry()
	if err != nil {
		t.Fatal(err)
	}
	// Two stacks of the real bootstrap, so that the scenarios share less:
	// a for flows and the plain webhook, b for the webhooks with answers
	// and the child run.
	a := newIAMStack(t, "flows", bin, reg)
	b := newIAMStack(t, "webhooks", bin, reg)
	ctx := context.Background()
	start := time.Now()

	var wg sync.WaitGroup
	scenario := func(name string, fn func(t *testing.T)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Scenarios report with t.Error (not Fatal): they run on
			// goroutines.
			fn(t)
		}()
	}
	scenario("quickstart", func(t *testing.T) {
		run, err := demo.FulfilOrder.Start(ctx, a.client, demo.Order{ID: "7", Items: []string{"book", "pen"}, Total: 12})
		if err != nil {
			t.Error(err)
			return
		}
		result(t, a, run, func(s string) bool { return s == "order 7: charged 12, label:book label:pen, shipped 7" })
	})
	scenario("fan-out", func(t *testing.T) {
		run, err := demo.FanOut.Start(ctx, a.client, 20)
		if err != nil {
			t.Error(err)
			return
		}
		result(t, a, run, func(n int) bool { return n == 2470 })
	})
	scenario("stream", func(t *testing.T) {
		run, err := demo.Streamer.Start(ctx, a.client, demo.Emission{Chunks: 3, Interval: 50 * time.Millisecond})
		if err != nil {
			t.Error(err)
			return
		}
		result(t, a, run, func(n int) bool { return n == 3 })
	})
	scenario("sleep", func(t *testing.T) {
		run, err := demo.Sleeper.Start(ctx, a.client, time.Second)
		if err != nil {
			t.Error(err)
			return
		}
		result(t, a, run, func(d time.Duration) bool { return d >= time.Second })
	})
	scenario("retry", func(t *testing.T) {
		run, err := demo.Flaky.Start(ctx, a.client, demo.Flakiness{Failures: 1})
		if err != nil {
			t.Error(err)
			return
		}
		result(t, a, run, func(n int) bool { return n == 2 })
	})
	scenario("cancel", func(t *testing.T) {
		run, err := demo.Approval.Start(ctx, a.client, struct{}{})
		if err != nil {
			t.Error(err)
			return
		}
		if a.token(t, run.ID()) == "" {
			return
		}
		if err := run.Cancel(ctx, "iam"); err != nil {
			t.Error(err)
			return
		}
		a.waitFor(t, run.ID(), world.RunStatusCancelled)
	})
	scenario("webhook 202 (claim-checked body)", func(t *testing.T) {
		run, err := demo.Approval.Start(ctx, a.client, struct{}{})
		if err != nil {
			t.Error(err)
			return
		}
		token := a.token(t, run.ID())
		if token == "" {
			return
		}
		// Larger than ClaimCheckThresholdBytes: the webhook function puts the
		// payload in S3, the flow function reads it, and claim-checks the
		// run's result.
		body := strings.Repeat("large webhook body ", 100<<10/19)
		if resp := a.callWebhook(t, token, body); resp.StatusCode != http.StatusAccepted {
			t.Errorf("webhook: %d %q, want 202", resp.StatusCode, resp.Body)
		}
		result(t, a, run, func(s string) bool { return s == body })
		if resp := a.callWebhook(t, "no-such-token", "x"); resp.StatusCode != http.StatusNotFound {
			t.Errorf("unknown token: %d, want 404", resp.StatusCode)
		}
	})
	scenario("webhook 202 (through the inbox)", func(t *testing.T) {
		run, err := demo.Approval.Start(ctx, b.client, struct{}{})
		if err != nil {
			t.Error(err)
			return
		}
		token := b.token(t, run.ID())
		if token == "" {
			return
		}
		// Too large for a queue message: the webhook function puts the
		// request in skein/inbox/, the flow function reads, checks, commits
		// and deletes it.
		body := strings.Repeat("inbox webhook body ", 300<<10/19)
		if resp := b.callWebhook(t, token, body); resp.StatusCode != http.StatusAccepted {
			t.Errorf("webhook: %d %q, want 202", resp.StatusCode, resp.Body)
		}
		result(t, b, run, func(s string) bool { return s == body })
	})
	scenario("webhook: methods that do not deliver", func(t *testing.T) {
		run, err := demo.Approval.Start(ctx, b.client, struct{}{})
		if err != nil {
			t.Error(err)
			return
		}
		token := b.token(t, run.ID())
		if token == "" {
			return
		}
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodDelete, http.MethodOptions} {
			want := http.StatusMethodNotAllowed
			if m == http.MethodOptions {
				want = http.StatusNoContent
			}
			if resp := b.callWebhookMethod(t, m, token, ""); resp.StatusCode != want || resp.Headers["Allow"] != sdk.WebhookAllow {
				t.Errorf("webhook %s: %d (Allow %q), want %d", m, resp.StatusCode, resp.Headers["Allow"], want)
			}
		}
		if resp := b.callWebhook(t, token, "approved"); resp.StatusCode != http.StatusAccepted {
			t.Errorf("webhook POST: %d, want 202", resp.StatusCode)
		}
		result(t, b, run, func(s string) bool { return s == "approved" })
	})
	scenario("webhook static response, then one a step answers", func(t *testing.T) {
		run, err := demo.StaticWebhook.Start(ctx, b.client, struct{}{})
		if err != nil {
			t.Error(err)
			return
		}
		if token := b.token(t, run.ID()); token != "" {
			if resp := b.callWebhook(t, token, "static"); resp.StatusCode != http.StatusOK || resp.Body != demo.StaticBody {
				t.Errorf("static webhook: %d %q", resp.StatusCode, resp.Body)
			}
			result(t, b, run, func(s string) bool { return s == "static" })
		}
		manual, err := demo.ManualWebhook.Start(ctx, b.client, struct{}{})
		if err != nil {
			t.Error(err)
			return
		}
		if token := b.token(t, manual.ID()); token != "" {
			if resp := b.callWebhook(t, token, "manual"); resp.StatusCode != http.StatusCreated || resp.Body != demo.ReplyBody {
				t.Errorf("manual webhook: %d %q, want 201 %q", resp.StatusCode, resp.Body, demo.ReplyBody)
			}
			result(t, b, manual, func(s string) bool { return s == "manual" })
		}
	})
	scenario("child run", func(t *testing.T) {
		run, err := demo.Parent.Start(ctx, b.client, 2)
		if err != nil {
			t.Error(err)
			return
		}
		result(t, b, run, func(n int) bool { return n == 2 })
	})
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	a.drain(5 * time.Minute)
	b.drain(5 * time.Minute)
	a.noFailures()
	b.noFailures()
	t.Logf("scenarios done in %s", time.Since(start).Round(time.Millisecond))
	// The real bootstrap's log never holds a token it was sent.
	for _, s := range []*iamStack{a, b} {
		out := s.whLogs.String()
		if !strings.Contains(out, "handler: webhook request") {
			t.Errorf("%s stack: the webhook function logged no request", s.name)
		}
		for _, tok := range s.tokens {
			if strings.Contains(out, tok) {
				t.Errorf("%s stack: the webhook function's log holds token %q", s.name, tok)
			}
		}
	}

	tmplPath := templatePath
	if p := os.Getenv("SKEIN_IAM_TEMPLATE"); p != "" {
		tmplPath = p
		t.Logf("roles from %s", p)
	}
	tmpl, err := lambdaemu.ReadTemplate(tmplPath)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]map[string]int{}       // function -> action -> requests
	partitions := map[string]map[string]int{} // function -> action and partition kind -> requests
	for _, fn := range []string{"FlowFunction", "WebhookFunction"} {
		used[fn], partitions[fn] = map[string]int{}, map[string]int{}
		var granted []string
		for _, s := range []*iamStack{a, b} {
			policy, arns := s.role(t, tmpl, fn)
			granted = policy.Actions()
			rec := s.flow
			if fn == "WebhookFunction" {
				rec = s.webhook
			}
			denied := map[string][]string{}
			for _, c := range rec.snapshot() {
				reqs, err := c.decode(arns)
				if err != nil {
					t.Errorf("%s (%s stack): a request the check cannot decode: %v\n\t%s", fn, s.name, err, c)
					continue
				}
				for _, r := range reqs {
					used[fn][r.Action]++
					if lk := r.Context[leadingKeysKey]; lk != "" {
						p, _, _ := strings.Cut(lk, "#")
						partitions[fn][r.Action+" "+p+"#*"]++
					}
					if ok, _ := policy.Allowed(r); !ok {
						k := r.String()
						denied[k] = append(denied[k], c.String())
					}
				}
			}
			keys := make([]string, 0, len(denied))
			for k := range denied {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				t.Errorf("%s (%s stack): its role does not allow %s: %d requests, such as\n\t%s", fn, s.name, k, len(denied[k]), denied[k][0])
			}
		}
		var usedList, unused []string
		for act, n := range used[fn] {
			usedList = append(usedList, fmt.Sprintf("%s (%d)", act, n))
		}
		sort.Strings(usedList)
		for _, g := range granted {
			if !slices.ContainsFunc(mapsKeys(used[fn]), func(a string) bool { return wildcardMatch(strings.ToLower(g), strings.ToLower(a)) }) {
				unused = append(unused, g)
			}
		}
		var parts []string
		for p, n := range partitions[fn] {
			parts = append(parts, fmt.Sprintf("%s (%d)", p, n))
		}
		sort.Strings(parts)
		t.Logf("%s used: %s", fn, strings.Join(usedList, ", "))
		t.Logf("%s DynamoDB partitions: %s", fn, strings.Join(parts, ", "))
		t.Logf("%s granted but not used: %s", fn, strings.Join(unused, ", "))
	}
}

func mapsKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// role resolves a function's role in tmpl to this stack's resources, and
// the ARNs the stack's requests name.
func (s *iamStack) role(t *testing.T, tmpl *lambdaemu.Template, function string) (iamPolicy, iamARNs) {
	t.Helper()
	arns := iamARNs{Region: "us-east-1", Account: "000000000000", Queues: map[string]string{
		s.queues.URL: s.queues.ARN, s.queues.DeadLetterURL: s.queues.DeadLetterARN,
	}}
	opts := s.resolve
	opts.Region, opts.AccountID = arns.Region, arns.Account
	opts.Attributes = map[string]string{}
	for k, v := range s.resolve.Attributes {
		opts.Attributes[k] = v
	}
	opts.Attributes["EventTable.Arn"] = arns.Table(s.res.Table)
	opts.Attributes["DataBucket.Arn"] = arns.Bucket(s.res.Bucket)
	_, fprops, err := tmpl.Resource(function, &opts)
	if err != nil {
		t.Fatal(err)
	}
	roleRef, _ := fprops["Role"].(string)
	roleID, ok := strings.CutSuffix(roleRef, ".Arn")
	if !ok {
		t.Fatalf("%s: Role %q is not a !GetAtt of a role in the template", function, roleRef)
	}
	typ, rprops, err := tmpl.Resource(roleID, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if typ != "AWS::IAM::Role" {
		t.Fatalf("%s: %s is a %s", function, roleID, typ)
	}
	policy, err := rolePolicy(rprops)
	if err != nil {
		t.Fatalf("%s: %v", roleID, err)
	}
	return policy, arns
}

// decode decodes a recorded request into IAM requests.
func (c iamCall) decode(arns iamARNs) ([]iamRequest, error) {
	switch c.service {
	case "dynamodb":
		return decodeDynamoDB(arns, c.header.Get("X-Amz-Target"), c.body)
	case "sqs":
		return decodeSQS(arns, c.header.Get("X-Amz-Target"), c.header.Get("Content-Type"), c.body)
	case "s3":
		return decodeS3(arns, c.method, c.path, c.query, c.header, c.body)
	}
	return nil, fmt.Errorf("unknown service %s", c.service)
}
