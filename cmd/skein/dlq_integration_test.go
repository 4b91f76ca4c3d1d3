//go:build integration

package main

import (
	"context"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// skein dlq redrive on a deployed stack (the emulators): the dead-letter
// queue, found through the work queue's redrive policy, holds the only
// message of a live run, a message of a run at rest and a body that is not
// a Skein message. The dry run lists each with its run, status and what
// moving it back does, and moves nothing; the redrive moves the Skein
// messages back to the work queue and leaves the other; a worker then
// completes the live run from its redriven message.
func TestCLIDeadLetterRedrive(t *testing.T) {
	t.Parallel()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	res, queueURL := dynamotest.NewResources(t, c)
	w, err := dynamoworld.New(context.Background(), dynamotest.Config(c, res, queueURL))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dlqURL := deadLetterQueue(ctx, t, c.SQS, queueURL)

	greet := workflow.New("greet", func(ctx workflow.Context, s string) (string, error) { return "hi " + s, nil })
	reg := workflow.NewRegistry().MustRegister(greet)
	client, err := client.New(client.Config{World: w, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	live, err := greet.Start(ctx, client, "dlq")
	if err != nil {
		t.Fatal(err)
	}
	moveToDLQ(ctx, t, c.SQS, queueURL, dlqURL) // the live run's only message
	resting := world.NewIDSource(nil, nil).New(world.PrefixRun)
	if _, err := w.Append(ctx, &world.AppendParams{RunID: resting, Events: []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "greet", Input: []byte(`"x"`)}},
		{Data: &world.RunStarted{}},
		{Data: &world.RunCompleted{Output: []byte(`"hi x"`)}},
		{Data: &world.RunDeactivated{}},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{fmt.Sprintf(`{"runId":%q}`, resting), "not a skein message"} {
		if _, err := c.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlqURL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}

	flags := []string{"-table", res.Table, "-queue-url", queueURL, "-bucket", res.Bucket}
	on := func(args ...string) result { return cli(append(append([]string{}, flags...), args...)...) }
	dry := on("dlq", "redrive", "-dry-run")
	t.Logf("skein dlq redrive -dry-run:\n%s", dry.out)
	dry.expect(t, 0, live.ID(), "pending", "resumes the run", resting, "completed",
		"nothing to resume (the run is at rest)", "stays: not a Skein message", "dry run: 3 dead letters listed, nothing moved")
	on("dlq", "redrive").expect(t, 0, "moved 2 dead letters back to the work queue; 1 left in the dead-letter queue")
	on("dlq", "redrive", "-dry-run").expect(t, 0, "stays: not a Skein message", "dry run: 1 dead letters listed")

	wk, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 2}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- wk.Run(wctx) }()
	defer func() { stop(); <-stopped }()
	if out, err := live.Result(ctx); err != nil || out != "hi dlq" {
		t.Fatalf("the redriven run: %q, %v", out, err)
	}
}

// deadLetterQueue creates a dead-letter queue for the work queue (its
// redrive policy names it) and returns its URL.
func deadLetterQueue(ctx context.Context, t *testing.T, q *sqs.Client, workURL string) string {
	t.Helper()
	name := workURL[strings.LastIndex(workURL, "/")+1:] + "-dlq"
	out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = q.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"5"}`, attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)])
	if _, err := q.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(workURL),
		Attributes: map[string]string{string(sqstypes.QueueAttributeNameRedrivePolicy): policy}}); err != nil {
		t.Fatal(err)
	}
	return url
}

// moveToDLQ moves the work queue's one message to the dead-letter queue,
// as SQS does once it has been received too often.
func moveToDLQ(ctx context.Context, t *testing.T, q *sqs.Client, workURL, dlqURL string) {
	t.Helper()
	got, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(workURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 5, MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 1 {
		t.Fatalf("the work queue holds %d messages, want the run's one", len(got.Messages))
	}
	m := got.Messages[0]
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlqURL), MessageBody: m.Body, MessageAttributes: m.MessageAttributes}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(workURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
}

// skein ui on a deployed stack (the emulators) has a dead-letter page on
// the code of skein dlq redrive: it lists the only message of a live run,
// in the dead-letter queue, with what a redrive resumes; its redrive form
// (CSRF-checked as every action) moves the message back, and a worker then
// completes the run.
func TestUIDeadLetterRedrive(t *testing.T) {
	t.Parallel()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	res, queueURL := dynamotest.NewResources(t, c)
	w, err := dynamoworld.New(context.Background(), dynamotest.Config(c, res, queueURL))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dlqURL := deadLetterQueue(ctx, t, c.SQS, queueURL)
	greet := workflow.New("greet", func(ctx workflow.Context, s string) (string, error) { return "hi " + s, nil })
	reg := workflow.NewRegistry().MustRegister(greet)
	client, err := client.New(client.Config{World: w, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	live, err := greet.Start(ctx, client, "ui")
	if err != nil {
		t.Fatal(err)
	}
	moveToDLQ(ctx, t, c.SQS, queueURL, dlqURL)

	base, _ := startUI(t, "-table", res.Table, "-queue-url", queueURL, "-bucket", res.Bucket)
	resp, err := http.Get(base + "/dlq")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if page := string(body); resp.StatusCode != http.StatusOK || !strings.Contains(page, live.ID()) ||
		!strings.Contains(page, "greet") || !strings.Contains(page, "resumes the run") || !strings.Contains(page, `action="/dlq/redrive"`) {
		t.Fatalf("GET /dlq = %d\n%.3000s", resp.StatusCode, page)
	}
	tok := strings.Repeat("cd", 32)
	post := func(origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, base+"/dlq/redrive", strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		req.AddCookie(&http.Cookie{Name: "skein_csrf", Value: tok})
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("http://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a redrive from another site = %d, want 403", resp.StatusCode)
	}
	if resp := post(base); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dlq?done=redrive&moved=1&kept=0" {
		t.Fatalf("redrive = %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	wk, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 2}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- wk.Run(wctx) }()
	defer func() { stop(); <-stopped }()
	if out, err := live.Result(ctx); err != nil || out != "hi ui" {
		t.Fatalf("the run redriven from the dashboard: %q, %v", out, err)
	}
}
