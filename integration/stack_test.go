//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/lambdaemu"
	"github.com/skeinflow/skein/world"
)

const templatePath = "../template.yaml"

// bootstrapBin is the real bootstrap (examples/lambda), built once for the
// host by TestMain.
var bootstrapBin struct {
	dir, path string
	size      int64
	took      time.Duration
	err       error
}

func TestMain(m *testing.M) {
	if os.Getenv(chaosWorkerEnv) != "" {
		os.Exit(chaosWorker()) // TestChaosLocalWorld's worker process
	}
	if os.Getenv("SKEIN_EMULATORS") == "1" {
		buildBootstrap()
	}
	code := m.Run()
	if bootstrapBin.dir != "" {
		_ = os.RemoveAll(bootstrapBin.dir)
	}
	os.Exit(code)
}

// buildBootstrap builds examples/lambda as Lambda's provided.al2023 runtime
// runs it (static, -tags lambda.norpc), for this machine's architecture.
func buildBootstrap() {
	dir, err := os.MkdirTemp("", "skein-integration-")
	if err != nil {
		bootstrapBin.err = err
		return
	}
	bootstrapBin.dir = dir
	start := time.Now()
	bootstrapBin.path, bootstrapBin.size, bootstrapBin.err = buildLambda(dir, "bootstrap", "linux", runtime.GOARCH, false)
	bootstrapBin.took = time.Since(start)
}

// buildLambda builds examples/lambda into dir/name as Lambda runs it
// (static, -tags lambda.norpc, -trimpath) for goos/goarch, optionally
// stripped (-ldflags "-s -w"), and returns its path and size.
func buildLambda(dir, name, goos, goarch string, strip bool) (string, int64, error) {
	args := []string{"build", "-tags", "lambda.norpc", "-trimpath"}
	if strip {
		args = append(args, "-ldflags", "-s -w")
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", append(args, "-o", out, "./examples/lambda")...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", 0, fmt.Errorf("go build ./examples/lambda (%s): %v\n%s", name, err, b)
	}
	st, err := os.Stat(out)
	if err != nil {
		return "", 0, err
	}
	return out, st.Size(), nil
}

// bootstrap returns the path of the bootstrap TestMain built.
func bootstrap(tb testing.TB) string {
	tb.Helper()
	if bootstrapBin.err != nil {
		tb.Fatal(bootstrapBin.err)
	}
	if bootstrapBin.path == "" {
		tb.Fatal("the bootstrap was not built")
	}
	return bootstrapBin.path
}

// logBuffer keeps a process's output for assertions and for the test log on
// failure.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// records returns the JSON log records, skipping other lines.
func (l *logBuffer) records() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(l.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// batchLog records the batches the ESM settled.
type batchLog struct {
	mu      sync.Mutex
	reports []lambdaemu.BatchReport
}

func (l *batchLog) add(r lambdaemu.BatchReport) {
	l.mu.Lock()
	l.reports = append(l.reports, r)
	l.mu.Unlock()
}

func (l *batchLog) all() []lambdaemu.BatchReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reports)
}

// stackOptions tune a test's (or a benchmark's) stack.
type stackOptions struct {
	// Parameters override template parameter defaults (as sam deploy
	// --parameter-overrides would).
	Parameters map[string]string
	// Env is added to the flow function's environment from the template.
	Env map[string]string
	// TemplateTimings keeps the function's timeout, the queue's visibility
	// timeout and MaximumConcurrency as the template has them (the
	// benchmarks'); by default they are shortened for tests.
	TemplateTimings bool
	// Adjust changes the mapping read from the template (short timeouts).
	Adjust func(*lambdaemu.Mapping)
	// NoESM leaves the event source mapping stopped (the cold start
	// benchmark invokes the function itself, with fc).
	NoESM bool
}

// stack is one test's resources, its flow function behind the ESM, and a
// client on the same World.
type stack struct {
	tb       testing.TB
	clients  dynamoworld.Clients
	res      dynamoworld.Resources
	queues   *lambdaemu.Queues
	tmpl     *lambdaemu.Template
	resolve  lambdaemu.ResolveOptions
	mapping  *lambdaemu.Mapping
	world    *dynamoworld.World
	client   *client.Client
	fc       lambdaemu.FunctionConfig // the flow function on the real bootstrap
	esm      *lambdaemu.ESM           // nil with NoESM
	batches  *batchLog
	flowLogs *logBuffer
	started  time.Time
}

var names = world.NewIDSource(nil, nil)

// newStack creates fresh resources, reads the mapping from template.yaml
// with them, and starts the ESM on the real bootstrap.
func newStack(tb testing.TB, o stackOptions) *stack {
	tb.Helper()
	clients := dynamotest.Clients(tb, dynamoworld.ClientOptions{}) // skips without emulators
	bin := bootstrap(tb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := strings.ToLower(names.New(""))
	s := &stack{tb: tb, clients: clients, batches: &batchLog{}, flowLogs: &logBuffer{}}
	s.res = dynamoworld.Resources{Table: "skein-it-" + id, Queue: "skein-it-" + id, Bucket: "skein-it-" + id}
	var err error
	if s.tmpl, err = lambdaemu.ReadTemplate(templatePath); err != nil {
		tb.Fatal(err)
	}
	s.resolve = lambdaemu.ResolveOptions{Parameters: o.Parameters}
	m, err := s.tmpl.Mapping(&lambdaemu.MappingOptions{ResolveOptions: s.resolve})
	if err != nil {
		tb.Fatal(err)
	}
	if m.Queue.Redrive == nil {
		tb.Fatal("the template's queue has no redrive policy")
	}
	if err := dynamoworld.CreateTable(ctx, clients.DynamoDB, s.res.Table); err != nil {
		tb.Fatal(err)
	}
	if _, err := clients.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s.res.Bucket)}); err != nil {
		tb.Fatal(err)
	}
	// Test timings: short, so that redeliveries take seconds. Adjust may
	// change them; the queue is created from the adjusted mapping.
	if !o.TemplateTimings {
		m.Function.Timeout = 20 * time.Second
		m.Queue.VisibilityTimeout = 25 * time.Second
		m.MaximumConcurrency = 3
	}
	if o.Adjust != nil {
		o.Adjust(m)
	}
	if s.queues, err = lambdaemu.ProvisionQueues(ctx, clients.SQS, s.res.Queue, m.Queue); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := dynamoworld.DeleteResources(ctx, clients, s.res, s.queues.URL); err != nil {
			tb.Logf("cleanup: %v", err)
		}
		_, _ = clients.SQS.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(s.queues.DeadLetterURL)})
	})

	// Read the mapping again, now that the resources exist: the function's
	// environment is the template's, resolved to them.
	s.resolve.Resources = map[string]string{"EventTable": s.res.Table, "WorkQueue": s.queues.URL, "DataBucket": s.res.Bucket}
	s.resolve.Attributes = map[string]string{"WorkQueue.Arn": s.queues.ARN, "DeadLetterQueue.Arn": s.queues.DeadLetterARN}
	fresh, err := s.tmpl.Mapping(&lambdaemu.MappingOptions{ResolveOptions: s.resolve})
	if err != nil {
		tb.Fatal(err)
	}
	m.Function.Env = fresh.Function.Env
	s.mapping = m

	s.world, err = dynamoworld.New(ctx, dynamotest.Config(clients, s.res, s.queues.URL))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.world.Close() })
	reg, err := demo.Registry()
	if err != nil {
		tb.Fatal(err)
	}
	if s.client, err = client.New(client.Config{World: s.world, Registry: reg}, knobs.WithResultPoll(50*time.Millisecond)); err != nil {
		tb.Fatal(err)
	}

	s.fc = m.FunctionConfig(bin)
	s.fc.PassEnv = lambdaemu.AWSPassEnv()
	s.fc.Stdout, s.fc.Stderr = s.flowLogs, s.flowLogs
	for k, v := range o.Env {
		s.fc.Env[k] = v
	}
	tb.Cleanup(func() {
		if s.esm != nil {
			_ = s.esm.Stop()
		}
		if tb.Failed() {
			s.logFailure()
		}
	})
	s.started = time.Now()
	if o.NoESM {
		return s
	}
	s.esm, err = lambdaemu.NewESM(lambdaemu.ESMConfig{
		Mapping: m, SQS: clients.SQS, QueueURL: s.queues.URL, QueueARN: s.queues.ARN, Function: s.fc,
		PollWait: time.Second, OnBatch: s.batches.add,
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.esm.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return s
}

// logFailure logs the flow function's output and the batches it settled.
func (s *stack) logFailure() {
	logs := s.flowLogs.String()
	if len(logs) > 64<<10 {
		logs = "...\n" + logs[len(logs)-64<<10:]
	}
	s.tb.Logf("flow function output:\n%s", logs)
	for i, r := range s.batches.all() {
		var bodies []string
		for _, rec := range r.Event.Records {
			bodies = append(bodies, rec.MessageId+"#"+rec.Attributes["ApproximateReceiveCount"]+" "+rec.Body)
		}
		resp := ""
		if r.Response != nil {
			resp = string(r.Response.Payload)
			if r.Response.Err != nil {
				resp = r.Response.Err.Type + ": " + r.Response.Err.Message
			}
		}
		s.tb.Logf("batch %d (worker %d): %v -> %s; settled %+v; deleted %v (%v)", i, r.Worker, bodies, resp, r.Settlement, r.Deleted, r.DeleteErr)
	}
}

// wait waits for a run to end and returns its info.
func (s *stack) wait(runID string, timeout time.Duration) *client.RunInfo {
	s.tb.Helper()
	limit := time.Now().Add(timeout)
	for {
		info, err := s.client.GetRun(context.Background(), runID)
		if err != nil {
			s.tb.Fatal(err)
		}
		if info.Status.Terminal() {
			return info
		}
		if time.Now().After(limit) {
			s.tb.Fatalf("run %s is still %s after %s", runID, info.Status, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// drain waits for the queue to empty.
func (s *stack) drain(timeout time.Duration) {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := s.esm.Drain(ctx); err != nil {
		s.tb.Fatal(err)
	}
}

// events returns a run's log.
func (s *stack) events(runID string) []world.Event {
	s.tb.Helper()
	var out []world.Event
	cursor := ""
	for {
		p, err := s.world.ListEvents(context.Background(), &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Cursor: cursor, Limit: 100}})
		if err != nil {
			s.tb.Fatal(err)
		}
		out = append(out, p.Items...)
		if !p.HasMore || len(p.Items) == 0 {
			return out
		}
		cursor = p.Cursor
	}
}

// count counts a run's events of type typ by correlation ID.
func (s *stack) count(runID string, typ world.EventType) map[string]int {
	n := map[string]int{}
	for _, ev := range s.events(runID) {
		if ev.Type() == typ {
			n[ev.CorrelationID]++
		}
	}
	return n
}

// exactlyOnce checks that every step of the run completed once, and that
// there are want steps.
func (s *stack) exactlyOnce(runID string, want int) {
	s.tb.Helper()
	done := s.count(runID, world.EventStepCompleted)
	if len(done) != want {
		s.tb.Errorf("%d steps completed, want %d", len(done), want)
	}
	for step, n := range done {
		if n != 1 {
			s.tb.Errorf("step %s: %d step_completed events", step, n)
		}
	}
}

// messages returns the bodies of every record the function received.
func (s *stack) messages() []world.Message {
	var out []world.Message
	for _, r := range s.batches.all() {
		for _, rec := range r.Event.Records {
			if m, err := world.DecodeMessage([]byte(rec.Body)); err == nil {
				out = append(out, m)
			}
		}
	}
	return out
}

// noFailures checks that no batch failed as a whole and no record was
// reported failed, except a record the flow function cut off at its
// deadline and handled in a later delivery: the handler's documented
// answer to an invocation whose in-flight work outlasts its time budget,
// which a loaded machine brings about in any test (see checkBatches).
// Those it logs.
func (s *stack) noFailures() {
	s.tb.Helper()
	c := checkBatches(s.batches.all(), s.flowLogs.records(), true)
	for _, e := range c.errs {
		s.tb.Error(e)
	}
	if len(c.cutoffs) > 0 {
		s.tb.Logf("%d records cut off at the deadline, then handled: %v", len(c.cutoffs), c.cutoffs)
	}
}

// noFailuresStrict is noFailures that also fails on a record cut off at the
// deadline, for a test whose subject is the time budget.
func (s *stack) noFailuresStrict() {
	s.tb.Helper()
	for _, e := range checkBatches(s.batches.all(), s.flowLogs.records(), false).errs {
		s.tb.Error(e)
	}
}

// coldStarts returns the init durations of the cold invocations.
func (s *stack) coldStarts() []time.Duration {
	var out []time.Duration
	for _, r := range s.batches.all() {
		if r.Response != nil && r.Response.Cold {
			out = append(out, r.Response.InitDuration)
		}
	}
	return out
}

// webhookConfig is the template's webhook function, with its environment
// resolved to the stack's resources, on the real bootstrap.
func (s *stack) webhookConfig() lambdaemu.FunctionConfig {
	s.tb.Helper()
	_, props, err := s.tmpl.Resource("WebhookFunction", &s.resolve)
	if err != nil {
		s.tb.Fatal(err)
	}
	env := map[string]string{}
	if e, ok := props["Environment"].(map[string]any); ok {
		if vars, ok := e["Variables"].(map[string]any); ok {
			for k, v := range vars {
				env[k] = fmt.Sprint(v)
			}
		}
	}
	if env["SKEIN_HANDLER"] != "webhook" {
		s.tb.Fatalf("the template's webhook function has SKEIN_HANDLER=%q", env["SKEIN_HANDLER"])
	}
	return lambdaemu.FunctionConfig{
		Bootstrap: bootstrap(s.tb), Name: "WebhookFunction", Timeout: 10 * time.Second, Env: env,
		PassEnv: lambdaemu.AWSPassEnv(), LogFormat: "JSON",
	}
}

// webhookFunction starts the webhook function (webhookConfig).
func (s *stack) webhookFunction() *lambdaemu.Function {
	s.tb.Helper()
	logs := &logBuffer{}
	cfg := s.webhookConfig()
	cfg.Stdout, cfg.Stderr = logs, logs
	f, err := lambdaemu.NewFunction(cfg)
	if err != nil {
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(func() {
		_ = f.Close()
		if s.tb.Failed() {
			s.tb.Logf("webhook function output:\n%s", logs.String())
		}
	})
	return f
}

// sendRaw puts a body on the work queue as a foreign producer would.
func (s *stack) sendRaw(body string) {
	s.tb.Helper()
	if _, err := s.clients.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(s.queues.URL), MessageBody: aws.String(body),
	}); err != nil {
		s.tb.Fatal(err)
	}
}
