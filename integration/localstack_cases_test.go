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
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// lsFlowLog is what the flow function logged through LocalStack's Lambda
// (CloudWatch Logs group /aws/lambda/<function>) since a time: one REPORT
// line per invocation, and its JSON records. (Its metrics record, written
// as an invocation ends, is not always in the log: it is not counted.)
type lsFlowLog struct {
	invocations int
	records     []map[string]any
}

// lsFlowLogSince reads the flow function's log since t (FilterLogEvents,
// signed as the SDK signs it).
func lsFlowLogSince(tb testing.TB, since time.Time) lsFlowLog {
	tb.Helper()
	arn := lsDeployed.out["SKEIN_FLOW_FUNCTION_ARN"]
	_, fn, ok := strings.Cut(arn, ":function:")
	if !ok {
		tb.Fatalf("flow function ARN %q", arn)
	}
	var out lsFlowLog
	token := ""
	for {
		in := map[string]any{"logGroupName": "/aws/lambda/" + fn, "startTime": since.UnixMilli()}
		if token != "" {
			in["nextToken"] = token
		}
		var page struct {
			Events    []struct{ Message string }
			NextToken string `json:"nextToken"`
		}
		lsLogsCall(tb, "FilterLogEvents", in, &page)
		for _, e := range page.Events {
			msg := strings.TrimSpace(e.Message)
			if strings.HasPrefix(msg, "REPORT RequestId:") {
				out.invocations++
				continue
			}
			var rec map[string]any
			if json.Unmarshal([]byte(msg), &rec) != nil {
				continue
			}
			out.records = append(out.records, rec)
		}
		if page.NextToken == "" || page.NextToken == token || len(page.Events) == 0 {
			return out
		}
		token = page.NextToken
	}
}

// lsLogsCall calls a CloudWatch Logs action (JSON 1.1) on the LocalStack
// endpoint.
func lsLogsCall(tb testing.TB, action string, in, out any) {
	tb.Helper()
	lsCall(tb, "logs", http.MethodPost, "/", map[string]string{
		"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "Logs_20140328." + action,
	}, in, out)
}

// lsCall sends a JSON request to an AWS service on the LocalStack endpoint,
// signed as the SDK signs it, and decodes the answer into out (when not nil).
func lsCall(tb testing.TB, service, method, path string, header map[string]string, in, out any) {
	tb.Helper()
	endpoint := os.Getenv("AWS_ENDPOINT_URL_" + strings.ToUpper(service))
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			tb.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(endpoint, "/")+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), service, lsRegion(), time.Now()); err != nil {
		tb.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		tb.Fatal(err)
	}
	if resp.StatusCode/100 != 2 {
		tb.Fatalf("%s %s %s: %d %s", service, method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			tb.Fatalf("%s %s %s: %v: %.300s", service, method, path, err, b)
		}
	}
}

// lsFlowConfig is the part of the deployed flow function's configuration
// the suite reads (Lambda GetFunctionConfiguration).
type lsFlowConfig struct {
	Timeout          int
	Environment      struct{ Variables map[string]string }
	State            string
	LastUpdateStatus string
}

func lsFlowConfigPath() string {
	return "/2015-03-31/functions/" + url.PathEscape(lsDeployed.out["SKEIN_FLOW_FUNCTION_ARN"]) + "/configuration"
}

// lsFlowFunction returns the deployed flow function's configuration.
func lsFlowFunction(tb testing.TB) lsFlowConfig {
	tb.Helper()
	var cur lsFlowConfig
	lsCall(tb, "lambda", http.MethodGet, lsFlowConfigPath(), nil, nil, &cur)
	return cur
}

// lsFlowEnv sets variables of the deployed flow function's environment
// (Lambda UpdateFunctionConfiguration) and waits until the update is
// done; it returns the environment it replaced (lsFlowEnvIs restores it).
func lsFlowEnv(tb testing.TB, set map[string]string) map[string]string {
	tb.Helper()
	old := lsFlowFunction(tb).Environment.Variables
	vars := maps.Clone(old)
	maps.Copy(vars, set)
	lsFlowEnvIs(tb, vars)
	return old
}

// lsFlowEnvIs makes vars the deployed flow function's whole environment
// and waits until the update is done.
func lsFlowEnvIs(tb testing.TB, vars map[string]string) {
	tb.Helper()
	lsCall(tb, "lambda", http.MethodPut, lsFlowConfigPath(), map[string]string{"Content-Type": "application/json"},
		map[string]any{"Environment": map[string]any{"Variables": vars}}, nil)
	for limit := time.Now().Add(2 * time.Minute); ; {
		cur := lsFlowFunction(tb)
		if cur.LastUpdateStatus == "Successful" && cur.State == "Active" {
			return
		}
		if cur.LastUpdateStatus == "Failed" || time.Now().After(limit) {
			tb.Fatalf("updating the flow function: %s, %s", cur.State, cur.LastUpdateStatus)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func lsRegion() string {
	if r := os.Getenv("AWS_REGION"); r != "" {
		return r
	}
	return "us-east-1"
}

// lsFunctionURLClient reaches LocalStack's Function URLs
// (<id>.lambda-url.<region>.<host>:<port>, a name no resolver knows) on
// the endpoint's address, with the URL's host in the Host header.
func lsFunctionURLClient(tb testing.TB) *http.Client {
	tb.Helper()
	u, err := url.Parse(os.Getenv("AWS_ENDPOINT_URL"))
	if err != nil || u.Host == "" {
		tb.Fatalf("AWS_ENDPOINT_URL %q: %v", os.Getenv("AWS_ENDPOINT_URL"), err)
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, u.Host)
		},
	}}
}

// lsWebhook: a webhook resumed over HTTP through the webhook function's
// Function URL: 202 and no body, the run completes with the body;
// afterwards, and for an unknown token, 404. Its token given to the API
// function's hook resume is a conflict (409, WEBHOOK).
func lsWebhook(t *testing.T) {
	s := newLSStack(t)
	base := lsDeployed.out["SKEIN_WEBHOOK_URL"]
	if base == "" {
		t.Fatal("the stack has no WebhookUrl output")
	}
	ctx := context.Background()
	run, err := demo.Approval.Start(ctx, s.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	token := ""
	for limit := time.Now().Add(time.Minute); token == ""; {
		p, err := s.world.ListHooks(ctx, &world.ListHooksParams{RunID: run.ID()})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > 0 {
			token = p.Items[0].Token
		}
		if time.Now().After(limit) {
			t.Fatal("the run created no webhook")
		}
		time.Sleep(50 * time.Millisecond)
	}
	hc := lsFunctionURLClient(t)
	// The API function refuses to resume a webhook's hook: 409, code WEBHOOK.
	if code, body := lsAPIPost(t, hc, "/v1/hooks/resume", `{"token":"`+token+`","payload":{"ok":false}}`); code != http.StatusConflict || !strings.Contains(body, `"WEBHOOK"`) {
		t.Errorf("API resume of a webhook: %d %s, want 409 with code WEBHOOK", code, body)
	}
	post := func(token, body string) (int, string) {
		t.Helper()
		resp, err := hc.Post(strings.TrimSuffix(base, "/")+workflow.WebhookPath+token, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(token, `{"ok":true}`); code != http.StatusAccepted || body != "" {
		t.Errorf("webhook: %d %q, want 202 and no body", code, body)
	}
	info := s.wait(run.ID(), time.Minute)
	if out, err := demo.Approval.Get(s.client, run.ID()).Result(ctx); info.Status != world.RunStatusCompleted || err != nil || out != `{"ok":true}` {
		t.Fatalf("%s: %q, %v", info.Status, out, err)
	}
	if code, body := post(token, "again"); code != http.StatusNotFound || body != "" {
		t.Errorf("after the run: %d %q, want 404 and no body", code, body)
	}
	if code, body := post("nope", "x"); code != http.StatusNotFound || body != "" {
		t.Errorf("unknown token: %d %q, want 404 and no body", code, body)
	}
	lsDrain(t, s, time.Minute)
}

// lsAPIPost sends a request to the API function's Function URL (AuthType
// AWS_IAM), signed with the environment's credentials for lambda.
func lsAPIPost(t *testing.T, hc *http.Client, path, body string) (int, string) {
	t.Helper()
	base := lsDeployed.out["SKEIN_API_URL"]
	if base == "" {
		t.Fatal("the stack has no ApiUrl output")
	}
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(base, "/")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	sum := sha256.Sum256([]byte(body))
	creds := aws.Credentials{AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "lambda", lsRegion(), time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// lsTimeBudget: with a 3s budget (the function's SKEIN_TIME_BUDGET_MARGIN
// set to its timeout less 3s for the case, as the emulator suite shortens
// its budget), a run of 5 steps of 1.2s stops starting steps at the
// budget, is continued by a message it re-enqueues, and completes with
// each step once.
func lsTimeBudget(t *testing.T) {
	s := newLSStack(t)
	timeout := lsFlowFunction(t).Timeout
	if timeout <= 3 {
		t.Fatalf("the flow function's timeout is %ds", timeout)
	}
	old := lsFlowEnv(t, map[string]string{"SKEIN_TIME_BUDGET_MARGIN": fmt.Sprintf("%ds", timeout-3)})
	defer lsFlowEnvIs(t, old)
	s.started = time.Now()
	ctx := context.Background()
	run, err := demo.Slow.Start(ctx, s.client, demo.Work{Steps: 5, D: 1200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	info := s.wait(run.ID(), 2*time.Minute)
	if out, err := run.Result(ctx); info.Status != world.RunStatusCompleted || err != nil || out != 5 {
		t.Fatalf("%s: %d, %v", info.Status, out, err)
	}
	lsDrain(t, s, time.Minute)
	s.exactlyOnce(run.ID(), 5)
	if fl := lsFlowLogSettled(t, s.started); fl.invocations < 2 {
		t.Errorf("%d invocations: the run did not outlive its budget", fl.invocations)
	}
}

// lsClaimCheck: an input over the claim-check threshold (64 KiB) goes to
// the stack's bucket; the run reads it back and completes.
func lsClaimCheck(t *testing.T) {
	s := newLSStack(t)
	ctx := context.Background()
	before := lsObjects(t, s)
	id := "big-" + strings.Repeat("x", 80_000)
	run, err := demo.FulfilOrder.Start(ctx, s.client, demo.Order{ID: id, Items: []string{"book"}, Total: 7})
	if err != nil {
		t.Fatal(err)
	}
	info := s.wait(run.ID(), 2*time.Minute)
	out, err := run.Result(ctx)
	if info.Status != world.RunStatusCompleted || err != nil || !strings.HasPrefix(out, "order "+id+": charged 7") {
		t.Fatalf("%s: %.80q…, %v", info.Status, out, err)
	}
	lsDrain(t, s, time.Minute)
	if after := lsObjects(t, s); after <= before {
		t.Errorf("the bucket holds %d objects, %d before: the input was not claim-checked", after, before)
	}
}

// lsObjects counts the stack bucket's objects.
func lsObjects(t *testing.T, s *stack) int {
	t.Helper()
	n := 0
	p := s3.NewListObjectsV2Paginator(s.clients.S3, &s3.ListObjectsV2Input{Bucket: aws.String(s.res.Bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Contents)
	}
	return n
}

// lsStream: a stream the run writes (to the bucket) is read back while the
// run goes on, every chunk in order.
func lsStream(t *testing.T) {
	s := newLSStack(t)
	ctx := context.Background()
	run, err := demo.Streamer.Start(ctx, s.client, demo.Emission{Chunks: 6, Interval: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var got []string
	for ch, err := range s.client.ReadStream(rctx, run.ID(), client.StreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(ch.Data))
	}
	if info := s.wait(run.ID(), time.Minute); info.Status != world.RunStatusCompleted {
		t.Fatalf("run %s", info.Status)
	}
	want := []string{"chunk 0", "chunk 1", "chunk 2", "chunk 3", "chunk 4", "chunk 5"}
	if !slices.Equal(got, want) {
		t.Errorf("read %q", got)
	}
	lsDrain(t, s, time.Minute)
}

// lsPoison: a body that is not a queue message is reported failed on each
// receive and LocalStack's SQS moves it to the DLQ after the template's
// maxReceiveCount (2 in this deploy), with a logged reason each time. The
// queue's visibility timeout (210s from the template for a 30s function)
// is shortened to 60s for the case, and restored: far longer than
// LocalStack takes to start the function and run a batch, so that a receive
// is not spent (the message visible again) while the function is still
// being started for it. With 5s, on a loaded machine (the arm64 function
// runs under qemu) both receives were spent before the function ran for
// either: the message was dead-lettered with no reason logged.
func lsPoison(t *testing.T) {
	s := newLSStack(t)
	ctx := context.Background()
	const maxReceives = 2 // lsParameters' MaxReceiveCount
	attrs, err := s.clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(s.queues.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameVisibilityTimeout, sqstypes.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		t.Fatal(err)
	}
	var rp struct {
		MaxReceiveCount json.Number `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(attrs.Attributes["RedrivePolicy"]), &rp); err != nil || rp.MaxReceiveCount.String() != fmt.Sprint(maxReceives) {
		t.Fatalf("the queue's redrive policy is %s (%v), want maxReceiveCount %d", attrs.Attributes["RedrivePolicy"], err, maxReceives)
	}
	setVisibility := func(v string) {
		if _, err := s.clients.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
			QueueUrl: aws.String(s.queues.URL), Attributes: map[string]string{"VisibilityTimeout": v},
		}); err != nil {
			t.Fatal(err)
		}
	}
	setVisibility("60")
	defer setVisibility(attrs.Attributes["VisibilityTimeout"])
	const poison = "this is not a skein message"
	s.sendRaw(poison)
	var dead []string
	for limit := time.Now().Add(5 * time.Minute); len(dead) == 0; {
		out, err := s.clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(s.queues.DeadLetterURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			dead = append(dead, aws.ToString(m.Body))
			if _, err := s.clients.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(s.queues.DeadLetterURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
		if time.Now().After(limit) {
			t.Fatal("the poisoned message did not reach the DLQ in 5 minutes")
		}
	}
	if !slices.Equal(dead, []string{poison}) {
		t.Errorf("DLQ holds %q", dead)
	}
	lsDrain(t, s, time.Minute)
	// LocalStack ships a function's log after its invocation, late on a
	// busy machine: wait for the reasons (up to a minute), then settle.
	read := func() (lsPoisonLog, int) {
		fl := lsFlowLogSince(t, s.started)
		return poisonLog(fl.records), fl.invocations
	}
	got, invocations := read()
	for limit := time.Now().Add(time.Minute); len(got.attempts) < maxReceives && time.Now().Before(limit); {
		time.Sleep(time.Second)
		got, invocations = read()
	}
	for i := 0; i < 30; i++ {
		time.Sleep(2 * time.Second)
		again, inv := read()
		if len(again.attempts) == len(got.attempts) && again.unexplained == got.unexplained && inv == invocations {
			break
		}
		got, invocations = again, inv
	}
	// Each receive the function ran logs its reason, once: a record without
	// one, a receive logged twice or past maxReceiveCount, or none at all
	// fails. Fewer than maxReceiveCount is LocalStack's doing, not the
	// handler's: on a starved machine its Lambda may spend a receive on an
	// execution environment that never ran the function (seen: 2
	// invocations, one reason, the message dead-lettered), which SQS counts
	// and nothing can log. TestMalformedToDLQ pins one reason per receive on
	// the project's Lambda emulator, which sees every batch it delivers.
	switch {
	case got.unexplained > 0:
		t.Errorf("%d malformed-message records without a reason", got.unexplained)
	case len(got.attempts) == 0:
		t.Errorf("no logged reason in %d invocations, want one per receive", invocations)
	case !got.distinctWithin(maxReceives):
		t.Errorf("logged receives %v, want each of 1..%d at most once", got.attempts, maxReceives)
	case len(got.attempts) < maxReceives:
		t.Logf("the function logged receives %v of %d (%d invocations): LocalStack spent the others without running it", got.attempts, maxReceives, invocations)
	}
}

// lsPoisonLog is what the flow function logged of a malformed message: the
// receive count (attempt) of each record with a reason, and how many
// records named it malformed without one.
type lsPoisonLog struct {
	attempts    []int
	unexplained int
}

func poisonLog(records []map[string]any) lsPoisonLog {
	var out lsPoisonLog
	for _, r := range records {
		if msg, _ := r["message"].(string); !strings.Contains(msg, "malformed") {
			continue
		}
		if r["reason"] == nil {
			out.unexplained++
			continue
		}
		n, _ := r["attempt"].(float64)
		out.attempts = append(out.attempts, int(n))
	}
	return out
}

// distinctWithin reports whether every attempt is in 1..max, each once.
func (l lsPoisonLog) distinctWithin(max int) bool {
	seen := map[int]bool{}
	for _, a := range l.attempts {
		if a < 1 || a > max || seen[a] {
			return false
		}
		seen[a] = true
	}
	return true
}
