//go:build integration

package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/internal/lambdaemu"
)

// apiCaller is the IAM identity the tests' Function URL lets in.
var apiCaller = lambdaemu.Principal{
	AccessKeyID: "AKIDAPICALLER", SecretAccessKey: "api-caller-secret", ARN: "arn:aws:iam::000000000000:user/api-caller",
}

// apiStack is a stack with the template's ApiFunction on the real
// bootstrap, behind a Function URL with the template's AuthType, its AWS
// requests recorded for the IAM check.
type apiStack struct {
	*stack
	url  *lambdaemu.FunctionURL
	rec  *iamRecorder
	logs *logBuffer
}

func newAPIStack(t *testing.T) *apiStack {
	t.Helper()
	s := &apiStack{stack: newStack(t, stackOptions{}), logs: &logBuffer{}}
	_, props, err := s.tmpl.Resource("ApiFunction", &s.resolve)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	if e, ok := props["Environment"].(map[string]any); ok {
		if vars, ok := e["Variables"].(map[string]any); ok {
			for k, v := range vars {
				env[k] = fmt.Sprint(v)
			}
		}
	}
	if env["SKEIN_HANDLER"] != "api" {
		t.Fatalf("the template's API function has SKEIN_HANDLER=%q", env["SKEIN_HANDLER"])
	}
	timeout, err := time.ParseDuration(fmt.Sprint(props["Timeout"]) + "s")
	if err != nil {
		t.Fatal(err)
	}
	cfg := lambdaemu.FunctionConfig{
		Bootstrap: bootstrap(t), Name: "ApiFunction", Timeout: timeout, Env: env,
		PassEnv: lambdaemu.AWSPassEnv(), LogFormat: "JSON", Stdout: s.logs, Stderr: s.logs,
	}
	s.rec = newIAMRecorder(t)
	s.rec.route(&cfg)
	fn, err := lambdaemu.NewFunction(cfg)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := s.tmpl.FunctionURLAuth("ApiFunction", &s.resolve)
	if err != nil {
		t.Fatal(err)
	}
	if auth != lambdaemu.AuthIAM {
		t.Fatalf("the API's Function URL has AuthType %s, want AWS_IAM", auth)
	}
	s.url, err = lambdaemu.NewFunctionURL(lambdaemu.FunctionURLConfig{
		Function: fn, AuthType: auth, Principals: []lambdaemu.Principal{apiCaller}, Region: "us-east-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.url.Close()
		_ = fn.Close()
		if t.Failed() {
			t.Logf("API function output:\n%s", s.logs.String())
		}
	})
	return s
}

// apiReply is a response, its body decoded.
type apiReply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// call sends a request to the API, signed with SigV4 by the AWS SDK's
// signer as the caller (unless unsigned).
func (s *apiStack) call(t *testing.T, method, path, body string, unsigned bool, header ...string) apiReply {
	t.Helper()
	req, err := http.NewRequest(method, s.url.URL()+strings.TrimPrefix(path, "/"), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if !unsigned {
		sum := sha256.Sum256([]byte(body))
		creds := aws.Credentials{AccessKeyID: apiCaller.AccessKeyID, SecretAccessKey: apiCaller.SecretAccessKey}
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "lambda", "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := apiReply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			t.Fatalf("%s %s: %d %q is not a JSON object", method, path, resp.StatusCode, raw)
		}
	}
	return r
}

// result polls GET /v1/runs/{id}/result until the run has ended (425
// before).
func (s *apiStack) result(t *testing.T, id string) apiReply {
	t.Helper()
	for limit := time.Now().Add(time.Minute); ; {
		r := s.call(t, http.MethodGet, "/v1/runs/"+id+"/result", "", false)
		if r.status != http.StatusTooEarly {
			return r
		}
		if r.header.Get("Retry-After") == "" || r.body["code"] != "RUN_NOT_ENDED" {
			t.Fatalf("425 without Retry-After or code: %v %s", r.header, r.raw)
		}
		if time.Now().After(limit) {
			t.Fatalf("run %s has not ended", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAPIThroughFunctionURL drives the HTTP API through the real
// bootstrap (SKEIN_HANDLER=api from the template) behind a Function URL
// with the template's AuthType AWS_IAM, each request signed by the AWS
// SDK's SigV4 signer: an unsigned or badly signed request is 403 and never
// reaches the function; a start with an idempotency key twice is one run
// (201, then 200); its status and result; bad input and an unknown
// workflow create no run; a stream; a hook resumed; a cancel. Then every
// AWS request the API function made is allowed by its role.
func TestAPIThroughFunctionURL(t *testing.T) {
	t.Parallel()
	s := newAPIStack(t)
	s.refusedBeforeTheFunction(t)
	s.startTwice(t)
	s.badInputCreatesNoRun(t)
	s.readStream(t)
	s.resumeHook(t)
	s.cancel(t)
	s.drain(time.Minute)
	s.noFailures()
	// Every request logged the caller the Function URL authenticated.
	callers := 0
	for _, rec := range s.logs.records() {
		if rec["message"] == "handler: API request" && rec["caller"] == apiCaller.ARN {
			callers++
		}
	}
	if int64(callers) != s.url.Invocations() {
		t.Errorf("%d request lines name the caller, of %d invocations", callers, s.url.Invocations())
	}
	s.checkRole(t)
	t.Logf("%d API invocations, %d refused", s.url.Invocations(), s.url.Refused())
}

// refusedBeforeTheFunction: unsigned and forged requests are 403 and
// invoke nothing.
func (s *apiStack) refusedBeforeTheFunction(t *testing.T) {
	t.Helper()
	forged := []string{"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDAPICALLER/20260101/us-east-1/lambda/aws4_request, SignedHeaders=host;x-amz-date, Signature=00",
		"X-Amz-Date", time.Now().UTC().Format("20060102T150405Z")}
	for name, header := range map[string][]string{"unsigned": nil, "forged": forged} {
		r := s.call(t, http.MethodPost, "/v1/workflows/fulfil-order/runs", `{"input":{"id":"x","total":1}}`, true, header...)
		if r.status != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", name, r.status, r.raw)
		}
	}
	if n := s.url.Invocations(); n != 0 {
		t.Fatalf("refused requests invoked the API function %d times", n)
	}
}

// startTwice: the same idempotency key twice is one run, 201 then 200;
// its result, status and the list.
func (s *apiStack) startTwice(t *testing.T) {
	t.Helper()
	order := `{"input":{"id":"42","items":["book","pen"],"total":30}}`
	first := s.call(t, http.MethodPost, "/v1/workflows/fulfil-order/runs", order, false, "Idempotency-Key", "order-42")
	again := s.call(t, http.MethodPost, "/v1/workflows/fulfil-order/runs", order, false, "Idempotency-Key", "order-42")
	if first.status != http.StatusCreated || again.status != http.StatusOK || first.body["id"] != again.body["id"] {
		t.Fatalf("start twice: %d %s; %d %s", first.status, first.raw, again.status, again.raw)
	}
	id := first.body["id"].(string)
	// The key names that start: another input under it is a 409 naming the
	// run, and creates nothing (the list below still holds one run).
	other := s.call(t, http.MethodPost, "/v1/workflows/fulfil-order/runs", `{"input":{"id":"42","items":["book"],"total":30}}`, false, "Idempotency-Key", "order-42")
	if other.status != http.StatusConflict || other.body["code"] != "CONFLICT" || other.body["runId"] != id {
		t.Errorf("same key, another input: %d %s; want a 409 naming run %s", other.status, other.raw, id)
	}
	if res := s.result(t, id); res.status != http.StatusOK || res.body["output"] != "order 42: charged 30, label:book label:pen, shipped 42" {
		t.Errorf("result: %d %s", res.status, res.raw)
	}
	if r := s.call(t, http.MethodGet, "/v1/runs/"+id, "", false); r.status != http.StatusOK || r.body["status"] != "completed" ||
		r.body["durationMs"] == nil || r.body["idempotencyKey"] != "order-42" {
		t.Errorf("status: %d %s", r.status, r.raw)
	}
	if r := s.call(t, http.MethodGet, "/v1/runs?workflow=fulfil-order", "", false); r.status != http.StatusOK || len(r.body["runs"].([]any)) != 1 {
		t.Errorf("list: %d %s", r.status, r.raw)
	}
}

// badInputCreatesNoRun: an input of the wrong type is 400 and an unknown
// workflow 404, and neither creates a run (startTwice's is the only one).
func (s *apiStack) badInputCreatesNoRun(t *testing.T) {
	t.Helper()
	if r := s.call(t, http.MethodPost, "/v1/workflows/fulfil-order/runs", `{"input":{"total":"thirty"}}`, false); r.status != http.StatusBadRequest ||
		r.header.Get("Content-Type") != "application/problem+json" || r.body["code"] != "INVALID_INPUT" {
		t.Errorf("bad input: %d %s", r.status, r.raw)
	}
	if r := s.call(t, http.MethodPost, "/v1/workflows/no-such-flow/runs", `{}`, false); r.status != http.StatusNotFound ||
		r.body["workflow"] != "no-such-flow" {
		t.Errorf("unknown workflow: %d %s", r.status, r.raw)
	}
	if p, err := s.client.ListRuns(context.Background(), client.ListRunsOptions{Limit: 100}); err != nil || len(p.Runs) != 1 {
		t.Fatalf("%d runs after the refused starts, want 1 (%v)", len(p.Runs), err)
	}
}

// readStream: the chunks a run wrote, from an offset.
func (s *apiStack) readStream(t *testing.T) {
	t.Helper()
	r := s.call(t, http.MethodPost, "/v1/workflows/streamer/runs", `{"input":{"chunks":3,"interval":1000000}}`, false)
	id, _ := r.body["id"].(string)
	if res := s.result(t, id); res.status != http.StatusOK || res.body["output"] != float64(3) {
		t.Errorf("streamer: %d %s", res.status, res.raw)
	}
	if r := s.call(t, http.MethodGet, "/v1/runs/"+id+"/stream?start=1", "", false); r.status != http.StatusOK ||
		r.raw != `{"chunks":[{"index":1,"type":"text","text":"chunk 1"},{"index":2,"type":"text","text":"chunk 2"}],"next":3,"done":true}`+"\n" {
		t.Errorf("stream: %d %s", r.status, r.raw)
	}
}

// resumeHook: a run waiting on a hook gets its payload and completes.
func (s *apiStack) resumeHook(t *testing.T) {
	t.Helper()
	plan := demo.ChaosPlan{Key: "api", Sleep: time.Millisecond}
	in, _ := json.Marshal(map[string]any{"input": plan})
	r := s.call(t, http.MethodPost, "/v1/workflows/chaos/runs", string(in), false)
	id, _ := r.body["id"].(string)
	token := demo.ChaosHookToken(plan.Key)
	for limit := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		r = s.call(t, http.MethodPost, "/v1/hooks/resume", fmt.Sprintf(`{"token":%q,"payload":{"by":"dana"}}`, token), false)
		if r.status != http.StatusNotFound || time.Now().After(limit) { // 404 until the run waits on the hook
			break
		}
	}
	if r.status != http.StatusAccepted || r.body["runId"] != id {
		t.Fatalf("resume: %d %s", r.status, r.raw)
	}
	if res := s.result(t, id); res.status != http.StatusOK || res.body["output"].(map[string]any)["approvedBy"] != "dana" {
		t.Errorf("hook run: %d %s", res.status, res.raw)
	}
}

// cancel: a run that waits on a hook (a long sleep would leave a delayed
// message in the queue), whose input is claim-checked to S3, is cancelled;
// its result is then a 409.
func (s *apiStack) cancel(t *testing.T) {
	t.Helper()
	pad := strings.Repeat("p", 100<<10)
	in, _ := json.Marshal(map[string]any{"input": demo.ChaosPlan{Key: "api-cancel", Sleep: time.Millisecond, Pad: pad}})
	r := s.call(t, http.MethodPost, "/v1/workflows/chaos/runs", string(in), false)
	id, _ := r.body["id"].(string)
	if r := s.call(t, http.MethodGet, "/v1/runs/"+id, "", false); r.status != http.StatusOK || r.body["input"].(map[string]any)["pad"] != pad {
		t.Errorf("large input: %d (%d bytes)", r.status, len(r.raw))
	}
	r = s.call(t, http.MethodPost, "/v1/runs/"+id+"/cancel", `{"reason":"api test"}`, false)
	if r.status != http.StatusOK || r.body["status"] != "cancelled" {
		t.Errorf("cancel: %d %s", r.status, r.raw)
	}
	if res := s.result(t, id); res.status != http.StatusConflict || res.body["code"] != "RUN_CANCELLED" {
		t.Errorf("cancelled result: %d %s", res.status, res.raw)
	}
}

// checkRole evaluates every AWS request the API function made against
// ApiFunctionRole in template.yaml (SKEIN_IAM_TEMPLATE: another template).
func (s *apiStack) checkRole(t *testing.T) {
	t.Helper()
	path := templatePath
	if p := os.Getenv("SKEIN_IAM_TEMPLATE"); p != "" {
		path = p
	}
	tmpl, err := lambdaemu.ReadTemplate(path)
	if err != nil {
		t.Fatal(err)
	}
	policy, arns := (&iamStack{stack: s.stack}).role(t, tmpl, "ApiFunction")
	used := map[string]int{}
	for _, c := range s.rec.snapshot() {
		reqs, err := c.decode(arns)
		if err != nil {
			t.Errorf("a request the check cannot decode: %v\n\t%s", err, c)
			continue
		}
		for _, r := range reqs {
			used[r.Action]++
			if ok, _ := policy.Allowed(r); !ok {
				t.Errorf("ApiFunctionRole does not allow %s, as in\n\t%s", r, c)
			}
		}
	}
	var list []string
	for a, n := range used {
		list = append(list, fmt.Sprintf("%s (%d)", a, n))
	}
	sort.Strings(list)
	t.Logf("ApiFunction used: %s", strings.Join(list, ", "))
}

// TestAPIRole: the API function's role does what a client.Client does
// and no more: no queue receiving or deleting (the flow function runs the
// runs), no stream writes, nothing outside the stack's table, queue and
// skein/ objects.
func TestAPIRole(t *testing.T) {
	t.Parallel()
	api := templateRole(t, "ApiFunctionRole")
	table := testARNs.Table("events")
	queue := "arn:aws:sqs:us-east-1:000000000000:work"
	for _, c := range []struct {
		r    iamRequest
		want bool
	}{
		{iamRequest{Action: "dynamodb:PutItem", Resource: table, Context: leading("i#abc")}, true},
		{iamRequest{Action: "dynamodb:Query", Resource: table + "/index/gs2"}, true},
		{iamRequest{Action: "dynamodb:Query", Resource: table + "/index/gs4"}, true}, // runs by attribute
		{iamRequest{Action: "dynamodb:BatchGetItem", Resource: table}, true},
		{iamRequest{Action: "dynamodb:Query", Resource: testARNs.Table("other")}, false},
		{iamRequest{Action: "dynamodb:Scan", Resource: table}, false},
		{iamRequest{Action: "dynamodb:ConditionCheckItem", Resource: table}, false},
		{iamRequest{Action: "dynamodb:DeleteItem", Resource: table, Context: leading("q#abc")}, true},
		{iamRequest{Action: "dynamodb:DeleteItem", Resource: table, Context: leading("t#abc")}, true},
		{iamRequest{Action: "dynamodb:DeleteItem", Resource: table, Context: leading("i#abc")}, false},
		{iamRequest{Action: "s3:PutObject", Resource: "arn:aws:s3:::data/skein/inbox/wd_1"}, false},
		{iamRequest{Action: "sqs:SendMessage", Resource: queue}, true},
		{iamRequest{Action: "sqs:ReceiveMessage", Resource: queue}, false},
		{iamRequest{Action: "sqs:DeleteMessage", Resource: queue}, false},
		{iamRequest{Action: "s3:PutObject", Resource: "arn:aws:s3:::data/skein/blobs/wrun_1/x"}, true},
		{iamRequest{Action: "s3:GetObject", Resource: "arn:aws:s3:::data/skein/streams/wrun_1/s/0"}, true},
		{iamRequest{Action: "s3:PutObject", Resource: "arn:aws:s3:::data/skein/streams/wrun_1/s/0"}, false},
		{iamRequest{Action: "s3:GetObject", Resource: "arn:aws:s3:::data/other/x"}, false},
		{iamRequest{Action: "s3:DeleteObject", Resource: "arn:aws:s3:::data/skein/blobs/x"}, false},
		{iamRequest{Action: "s3:ListBucket", Resource: "arn:aws:s3:::data"}, false},
		{iamRequest{Action: "lambda:InvokeFunction", Resource: "*"}, false},
	} {
		if got, _ := api.Allowed(c.r); got != c.want {
			t.Errorf("%s: allowed %v, want %v", c.r, got, c.want)
		}
	}
}
