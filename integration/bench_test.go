//go:build integration

package integration

// Benchmarks of the Lambda deployment, through the real bootstrap
// (examples/lambda, built by TestMain) driven by lambdaemu's event source
// mapping on the offline emulators. Run by hand, not by `make test`:
//
//	SKEIN_EMU_JAVA_OPTS= bash localstack/emulators.sh start   # full JIT: latency figures
//	eval "$(bash localstack/emulators.sh env)"
//	go test -tags integration -run '^$' -bench . -benchtime 3x ./integration/
//
// Each benchmark creates its own table, queues and bucket and reads the
// event source mapping, the function's environment and the queue from
// template.yaml, unchanged unless the benchmark says otherwise. The
// figures are reported as custom metrics (b.ReportMetric) and logged in
// detail; BENCHMARKS.md ("lambda") holds a set of them.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/internal/lambdaemu"
	"github.com/skeinflow/skein/world"
)

// benchBatch is a batch the ESM settled.
type benchBatch struct {
	rep lambdaemu.BatchReport
}

// benchStack is a stack (stack_test.go) on the template's mapping as it is,
// with the benchmarks' helpers.
type benchStack struct {
	*stack
}

// newBenchStack is newStack with the template's timings (o.TemplateTimings).
func newBenchStack(tb testing.TB, o stackOptions) *benchStack {
	tb.Helper()
	o.TemplateTimings = true
	return &benchStack{newStack(tb, o)}
}

// batchesSince returns the batches settled after the first n.
func (s *benchStack) batchesSince(n int) []benchBatch {
	var out []benchBatch
	for _, r := range s.batches.all()[n:] {
		out = append(out, benchBatch{rep: r})
	}
	return out
}

func (s *benchStack) batchCount() int {
	return len(s.batches.all())
}

// drain waits until the queue is empty and no batch is in flight, for up
// to 3 minutes. It polls SQS (not DynamoDB), so waiting adds no load to the
// table.
func (s *benchStack) drain() {
	s.tb.Helper()
	s.stack.drain(3 * time.Minute)
}

// completed checks that the run completed, and returns its info.
func (s *benchStack) completed(runID string) *client.RunInfo {
	s.tb.Helper()
	info, err := s.client.GetRun(context.Background(), runID)
	if err != nil {
		s.tb.Fatal(err)
	}
	if info.Status != world.RunStatusCompleted {
		s.tb.Fatalf("run %s is %s", runID, info.Status)
	}
	return info
}

// stepStarts returns the times of the run's step_started events, in log
// order.
func (s *benchStack) stepStarts(runID string) []time.Time {
	s.tb.Helper()
	var out []time.Time
	cursor := ""
	for {
		p, err := s.world.ListEvents(context.Background(), &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Cursor: cursor, Limit: 100}})
		if err != nil {
			s.tb.Fatal(err)
		}
		for _, ev := range p.Items {
			if ev.Type() == world.EventStepStarted {
				out = append(out, ev.CreatedAt)
			}
		}
		if !p.HasMore || len(p.Items) == 0 {
			return out
		}
		cursor = p.Cursor
	}
}

// tx3 is the baseline: a bare TransactWriteItems of three small
// conditional puts (items of about 250 bytes) on a fresh partition, as
// BenchmarkDynamoCommitLatency (bench/dynamo_test.go) measures it.
func (s *benchStack) tx3(i int) time.Duration {
	s.tb.Helper()
	pk := fmt.Sprintf("bench#t%d-%d", i, time.Now().UnixNano())
	val := strings.Repeat("v", 200)
	cond := aws.String("attribute_not_exists(pk)")
	tis := make([]types.TransactWriteItem, 3)
	for j := range tis {
		tis[j] = types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.res.Table), ConditionExpression: cond,
			Item: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: pk},
				"sk": &types.AttributeValueMemberS{Value: fmt.Sprint("s", j)},
				"v":  &types.AttributeValueMemberS{Value: val},
			}}}
	}
	t0 := time.Now()
	if _, err := s.clients.DynamoDB.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: tis}); err != nil {
		s.tb.Fatal(err)
	}
	return time.Since(t0)
}

// worldStep appends one serial step's commit (step k completed, step k+1
// created and started, payloads of about 100 bytes) through an in-process
// World: the TransactWriteItems the bootstrap sends per step, without the
// engine and the process around it. It returns the new step's ID.
func (s *benchStack) worldStep(runID, prev string, k int) (string, time.Duration) {
	s.tb.Helper()
	payload := json.RawMessage(fmt.Sprintf(`{"step":%d,"data":"%s"}`, k, strings.Repeat("x", 80)))
	next := names.New(world.PrefixStep)
	var evs []world.EventInput
	if prev != "" {
		evs = append(evs, world.EventInput{CorrelationID: prev, Data: &world.StepCompleted{Result: payload}})
	}
	evs = append(evs,
		world.EventInput{CorrelationID: next, Data: &world.StepCreated{StepName: "increment", Input: payload}},
		world.EventInput{CorrelationID: next, Data: &world.StepStarted{LeaseTTL: time.Minute}})
	t0 := time.Now()
	if _, err := s.world.Append(context.Background(), &world.AppendParams{RunID: runID, Events: evs}); err != nil {
		s.tb.Fatal(err)
	}
	return next, time.Since(t0)
}

// worldRun creates and starts a run for worldStep.
func (s *benchStack) worldRun() string {
	s.tb.Helper()
	id := names.New(world.PrefixRun)
	if _, err := s.world.Append(context.Background(), &world.AppendParams{RunID: id, Events: []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "bench", Input: json.RawMessage(`100`)}},
		{Data: &world.RunStarted{}},
	}}); err != nil {
		s.tb.Fatal(err)
	}
	return id
}

// pct is the p-th percentile (nearest rank) in milliseconds.
func pct(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return float64(s[max(0, i)]) / float64(time.Millisecond)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// messageKinds classifies the records of batches: a background step (a
// message with a stepId), a delayed wake-up (notBefore set: a sleep, a
// retry, or the safety net at a step lease's expiry), or a run message
// (the start, or a continuation).
func messageKinds(bs []benchBatch) (steps, delayed, run int) {
	for _, b := range bs {
		for _, rec := range b.rep.Event.Records {
			m, err := world.DecodeMessage([]byte(rec.Body))
			switch {
			case err != nil:
			case m.StepID != "":
				steps++
			case !m.NotBefore.IsZero():
				delayed++
			default:
				run++
			}
		}
	}
	return steps, delayed, run
}

// noBatchFailures fails on a batch that failed or reported a failed record.
func noBatchFailures(tb testing.TB, bs []benchBatch) {
	tb.Helper()
	for _, b := range bs {
		r := b.rep
		if r.InvokeErr != nil || r.Response == nil || r.Response.Err != nil {
			tb.Fatalf("batch failed: %v %+v", r.InvokeErr, r.Response)
		}
		var resp events.SQSEventResponse
		if err := json.Unmarshal(r.Response.Payload, &resp); err != nil || len(resp.BatchItemFailures) > 0 {
			tb.Fatalf("batch response %s (%v)", r.Response.Payload, err)
		}
	}
}

// BenchmarkLambdaSerial100 runs the demo's serial workflow, 100 steps, one
// run per op, through the ESM and the real bootstrap on the template's
// mapping, and counts the invocations and SQS messages each run took (goal:
// 1 and 1). It also measures the step-to-step overhead: the gaps between
// consecutive step_started events (stamped by the bootstrap), against a
// bare 3-item TransactWriteItems timed from this process right after each
// run (100 of them), so that both see the same machine load; the goal is a
// p50 gap of at most 1.3x the bare transaction's. Interleaved op by op with
// those bare transactions, the same commit through an in-process World
// (worldStep) splits the gap: item sizes and the World's work on one side,
// the engine and the process on the other. A warm-up run and 200 of each
// reference op come first: DynamoDB Local's JIT (run just after the
// emulators start, the ratio measured about 2x until the JVM had served a
// few thousand transactions).
func BenchmarkLambdaSerial100(b *testing.B) {
	const steps = 100
	s := newBenchStack(b, stackOptions{})
	ctx := context.Background()
	runOnce := func() (runID string, bs []benchBatch) {
		n0 := s.batchCount()
		run, err := demo.Serial.Start(ctx, s.client, steps)
		if err != nil {
			b.Fatal(err)
		}
		s.drain()
		s.completed(run.ID())
		if out, err := run.Result(ctx); err != nil || out != steps {
			b.Fatalf("result %d, %v", out, err)
		}
		bs = s.batchesSince(n0)
		noBatchFailures(b, bs)
		return run.ID(), bs
	}
	for range 3 { // a fresh DynamoDB Local JVM compiles the bootstrap's transaction path late
		runOnce()
	}
	wrun, prev := s.worldRun(), ""
	for i := range 200 {
		s.tx3(-i - 1)
		prev, _ = s.worldStep(wrun, prev, i)
	}

	var gaps, txs, wsteps []time.Duration
	var invocations, messages, cold []float64
	var runMs []float64
	i := 0
	for b.Loop() {
		id, bs := runOnce()
		starts := s.stepStarts(id)
		if len(starts) != steps {
			b.Fatalf("%d step_started events, want %d", len(starts), steps)
		}
		for k := 1; k < len(starts); k++ {
			gaps = append(gaps, starts[k].Sub(starts[k-1]))
		}
		runMs = append(runMs, float64(starts[len(starts)-1].Sub(starts[0]))/float64(time.Millisecond))
		invocations = append(invocations, float64(len(bs)))
		m, c := 0, 0
		for _, x := range bs {
			m += len(x.rep.Event.Records)
			if x.rep.Response.Cold {
				c++
			}
		}
		messages = append(messages, float64(m))
		cold = append(cold, float64(c))
		for range steps {
			txs = append(txs, s.tx3(i))
			var d time.Duration
			prev, d = s.worldStep(wrun, prev, i)
			wsteps = append(wsteps, d)
			i++
		}
	}
	gp50, gp90, tp50, tp90 := pct(gaps, 50), pct(gaps, 90), pct(txs, 50), pct(txs, 90)
	b.ReportMetric(median(invocations), "invocations/run")
	b.ReportMetric(median(messages), "messages/run")
	b.ReportMetric(gp50, "gap-p50-ms")
	b.ReportMetric(gp90, "gap-p90-ms")
	b.ReportMetric(tp50, "tx3-p50-ms")
	b.ReportMetric(tp90, "tx3-p90-ms")
	wp50, wp90 := pct(wsteps, 50), pct(wsteps, 90)
	b.ReportMetric(wp50, "worldstep-p50-ms")
	b.ReportMetric(gp50/tp50, "gap/tx3-p50")
	b.ReportMetric(gp90/tp90, "gap/tx3-p90")
	b.Logf("%d runs of %d serial steps: invocations %v, messages %v, cold invocations %v; step 1 to step %d: %v ms; "+
		"%d gaps p50 %.2f p90 %.2f ms; %d bare 3-item TransactWriteItems p50 %.2f p90 %.2f ms; ratio p50 %.2f p90 %.2f; "+
		"in-process World serial-step commit p50 %.2f p90 %.2f ms (%.2fx the bare transaction at p50)",
		len(invocations), steps, invocations, messages, cold, steps, runMs, len(gaps), gp50, gp90, len(txs), tp50, tp90, gp50/tp50, gp90/tp90,
		wp50, wp90, wp50/tp50)
}

// BenchmarkLambdaFanOut50 runs the demo's fan-out of 50 steps, one run per
// op, and counts invocations and SQS messages: until the run completed, and
// until the queue drained (the safety-net wake-ups a continuation schedules
// at a step lease's expiry arrive after the run has completed; the step
// lease is shortened to 5s, as in TestFanOutConverges, so that they arrive
// within the op). The goal is at most ceil(50/InlineConcurrency)
// invocations. Sub-benchmarks: the template's mapping as it is, then with
// a 1s batching window, then with MaximumConcurrency 2.
func BenchmarkLambdaFanOut50(b *testing.B) {
	const width = 50
	for _, v := range []struct {
		name   string
		params map[string]string
	}{
		{"template", nil},
		{"window=1s", map[string]string{"MaximumBatchingWindowInSeconds": "1"}},
		{"concurrency=2", map[string]string{"MaximumConcurrency": "2"}},
	} {
		b.Run(v.name, func(b *testing.B) {
			s := newBenchStack(b, stackOptions{Parameters: v.params, Env: map[string]string{"SKEIN_STEP_LEASE_TTL": "5s"}})
			inline := s.mapping.Function.Env["SKEIN_INLINE_CONCURRENCY"]
			var inl int
			if _, err := fmt.Sscan(inline, &inl); err != nil || inl < 1 {
				b.Fatalf("SKEIN_INLINE_CONCURRENCY=%q", inline)
			}
			goal := (width + inl - 1) / inl
			ctx := context.Background()
			var invDone, invAll, msgDone, msgAll, stepMsgs, delayedMsgs, runMsgs, maxBatch, tookMs []float64
			for b.Loop() {
				n0 := s.batchCount()
				run, err := demo.FanOut.Start(ctx, s.client, width)
				if err != nil {
					b.Fatal(err)
				}
				s.drain()
				info := s.completed(run.ID())
				if out, err := run.Result(ctx); err != nil || out != 40425 {
					b.Fatalf("result %d, %v", out, err)
				}
				bs := s.batchesSince(n0)
				noBatchFailures(b, bs)
				var done []benchBatch
				largest := 0
				for _, x := range bs {
					delivered := x.rep.Response.Deadline.Add(-s.mapping.Function.Timeout)
					if !delivered.After(info.CompletedAt) {
						done = append(done, x)
					}
					largest = max(largest, len(x.rep.Event.Records))
				}
				count := func(bs []benchBatch) float64 {
					n := 0
					for _, x := range bs {
						n += len(x.rep.Event.Records)
					}
					return float64(n)
				}
				st, dl, rn := messageKinds(bs)
				invDone = append(invDone, float64(len(done)))
				invAll = append(invAll, float64(len(bs)))
				msgDone = append(msgDone, count(done))
				msgAll = append(msgAll, count(bs))
				stepMsgs = append(stepMsgs, float64(st))
				delayedMsgs = append(delayedMsgs, float64(dl))
				runMsgs = append(runMsgs, float64(rn))
				maxBatch = append(maxBatch, float64(largest))
				tookMs = append(tookMs, float64(info.CompletedAt.Sub(info.CreatedAt))/float64(time.Millisecond))
			}
			b.ReportMetric(median(invDone), "invocations-to-complete/run")
			b.ReportMetric(median(invAll), "invocations-to-drain/run")
			b.ReportMetric(median(msgAll), "messages/run")
			b.ReportMetric(float64(goal), "goal-invocations")
			b.Logf("fan-out of %d, InlineConcurrency %d (goal: at most %d invocations), BatchSize %d, window %s, MaximumConcurrency %d: "+
				"invocations to completion %v, to drain %v; messages to completion %v, to drain %v "+
				"(background steps %v, delayed wake-ups %v, run messages %v); largest batch %v; run took %v ms",
				width, inl, goal, s.mapping.BatchSize, s.mapping.MaximumBatchingWindow, s.mapping.MaximumConcurrency,
				invDone, invAll, msgDone, msgAll, stepMsgs, delayedMsgs, runMsgs, maxBatch, tookMs)
		})
	}
}

// requestCounter is a reverse proxy in front of an AWS endpoint that counts
// requests by operation (X-Amz-Target) and the time spent in them.
type requestCounter struct {
	mu    sync.Mutex
	count map[string]int
	spent map[string]time.Duration
	srv   *httptest.Server
}

func newRequestCounter(tb testing.TB, endpoint string) *requestCounter {
	tb.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		tb.Fatal(err)
	}
	rc := &requestCounter{count: map[string]int{}, spent: map[string]time.Duration{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := r.Header.Get("X-Amz-Target")
		if i := strings.LastIndexByte(op, '.'); i >= 0 {
			op = op[i+1:]
		}
		if op == "" {
			op = r.Method
		}
		t0 := time.Now()
		proxy.ServeHTTP(w, r)
		rc.mu.Lock()
		rc.count[op]++
		rc.spent[op] += time.Since(t0)
		rc.mu.Unlock()
	}))
	tb.Cleanup(rc.srv.Close)
	return rc
}

func (rc *requestCounter) reset() {
	rc.mu.Lock()
	clear(rc.count)
	clear(rc.spent)
	rc.mu.Unlock()
}

func (rc *requestCounter) String() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var parts []string
	for op, n := range rc.count {
		parts = append(parts, fmt.Sprintf("%s %d (%.2f ms each)", op, n, float64(rc.spent[op])/float64(n)/float64(time.Millisecond)))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// BenchmarkLambdaSerial100Requests is a diagnostic for
// BenchmarkLambdaSerial100: the same runs with the bootstrap's DynamoDB and
// SQS endpoints behind counting proxies, to see which requests a run of 100
// serial steps makes. The proxies add a hop, so its timings are not the
// overhead figure.
func BenchmarkLambdaSerial100Requests(b *testing.B) {
	const steps = 100
	ddbEndpoint, sqsEndpoint := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), os.Getenv("AWS_ENDPOINT_URL_SQS")
	if ddbEndpoint == "" || sqsEndpoint == "" {
		b.Skip("needs AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_SQS")
	}
	ddb, q := newRequestCounter(b, ddbEndpoint), newRequestCounter(b, sqsEndpoint)
	s := newBenchStack(b, stackOptions{Env: map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": ddb.srv.URL, "AWS_ENDPOINT_URL_SQS": q.srv.URL,
	}})
	ctx := context.Background()
	for b.Loop() {
		ddb.reset()
		q.reset()
		run, err := demo.Serial.Start(ctx, s.client, steps)
		if err != nil {
			b.Fatal(err)
		}
		s.drain()
		s.completed(run.ID())
		starts := s.stepStarts(run.ID())
		perStep := starts[len(starts)-1].Sub(starts[0]) / time.Duration(len(starts)-1)
		ddb.mu.Lock()
		txEach := ddb.spent["TransactWriteItems"] / time.Duration(max(1, ddb.count["TransactWriteItems"]))
		ddb.mu.Unlock()
		b.Logf("run of %d serial steps, the bootstrap's requests: DynamoDB: %s; SQS: %s; mean step-to-step %.2f ms, "+
			"of which %.2f ms in the TransactWriteItems as the proxy sees it", steps, ddb, q,
			float64(perStep)/float64(time.Millisecond), float64(txEach)/float64(time.Millisecond))
	}
}

// buildVariant builds the bootstrap as TestMain does (buildLambda) for
// goos/goarch, optionally stripped (-ldflags "-s -w"), into dir, and returns
// its path and size.
func buildVariant(tb testing.TB, dir, goos, goarch string, strip bool) (string, int64) {
	tb.Helper()
	name := "bootstrap-" + goos + "-" + goarch
	if strip {
		name += "-stripped"
	}
	out, size, err := buildLambda(dir, name, goos, goarch, strip)
	if err != nil {
		tb.Fatal(err)
	}
	return out, size
}

// BenchmarkLambdaBootstrapSize builds the bootstrap for Lambda (linux/arm64)
// and for this machine, with and without -ldflags "-s -w", and reports the
// sizes in MiB. The builds happen once; the loop does nothing.
func BenchmarkLambdaBootstrapSize(b *testing.B) {
	dir := b.TempDir()
	type variant struct {
		goarch string
		strip  bool
	}
	vs := []variant{{"arm64", false}, {"arm64", true}}
	if runtime.GOARCH != "arm64" {
		vs = append(vs, variant{runtime.GOARCH, false}, variant{runtime.GOARCH, true})
	}
	sizes := map[variant]int64{}
	for _, v := range vs {
		_, sizes[v] = buildVariant(b, dir, "linux", v.goarch, v.strip)
	}
	for b.Loop() {
	}
	var lines []string
	for _, v := range vs {
		unit := "MiB-linux-" + v.goarch
		if v.strip {
			unit += "-stripped"
		}
		b.ReportMetric(float64(sizes[v])/(1<<20), unit)
		lines = append(lines, fmt.Sprintf("%s: %d bytes", unit, sizes[v]))
	}
	b.Logf("bootstrap (go build -tags lambda.norpc -trimpath, CGO_ENABLED=0): %s", strings.Join(lines, "; "))
}

// BenchmarkLambdaColdStart starts the bootstrap afresh for every
// invocation (the template's flow function environment, on the
// emulators), 10 cold starts per op, for the host build with and without
// -ldflags "-s -w". It reports the medians of lambdaemu's InitDuration
// (process start to the runtime's first GET /next, Lambda's Init Duration)
// and of the time from process start to the first response, for an empty
// batch and for a batch holding the start message of a 1-step serial run
// (which the invocation loads cold, runs and completes). Goal: under 30 ms
// to the first response.
func BenchmarkLambdaColdStart(b *testing.B) {
	const perOp = 10
	s := newBenchStack(b, stackOptions{NoESM: true})
	dir := b.TempDir()
	stripped, _ := buildVariant(b, dir, "linux", runtime.GOARCH, true)
	ctx := context.Background()
	empty := []byte(`{"Records":[]}`)
	oneRun := func() ([]byte, string) {
		run, err := demo.Serial.Start(ctx, s.client, 1)
		if err != nil {
			b.Fatal(err)
		}
		body, err := world.EncodeMessage(world.Message{RunID: run.ID()})
		if err != nil {
			b.Fatal(err)
		}
		ev := events.SQSEvent{Records: []events.SQSMessage{{
			MessageId: "m-" + run.ID(), ReceiptHandle: "rh-" + run.ID(), Body: string(body), EventSource: "aws:sqs",
			EventSourceARN: s.queues.ARN, AWSRegion: "us-east-1", Attributes: map[string]string{"ApproximateReceiveCount": "1"},
		}}}
		payload, err := json.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		return payload, run.ID()
	}
	type series struct{ init, empty, run []time.Duration }
	bins := []struct {
		name, path string
	}{{"unstripped", bootstrapBin.path}, {"stripped", stripped}}
	res := make([]series, len(bins))
	invoke := func(bin string, payload []byte) *lambdaemu.Response {
		fc := s.fc
		fc.Bootstrap = bin
		f, err := lambdaemu.NewFunction(fc)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		r, err := f.Invoke(ctx, payload)
		if err != nil {
			b.Fatal(err)
		}
		if r.Err != nil || !r.Cold {
			b.Fatalf("cold invocation: %+v", r)
		}
		var resp events.SQSEventResponse
		if err := json.Unmarshal(r.Payload, &resp); err != nil || len(resp.BatchItemFailures) > 0 {
			b.Fatalf("response %s (%v)", r.Payload, err)
		}
		return r
	}
	for i := range 2 { // warm the page cache and the emulators
		invoke(bins[i].path, empty)
	}
	for b.Loop() {
		for range perOp {
			for i, bin := range bins { // alternate the binaries
				r := invoke(bin.path, empty)
				res[i].init = append(res[i].init, r.InitDuration)
				res[i].empty = append(res[i].empty, r.InitDuration+r.Duration)
				payload, runID := oneRun()
				r = invoke(bin.path, payload)
				s.completed(runID)
				res[i].init = append(res[i].init, r.InitDuration)
				res[i].run = append(res[i].run, r.InitDuration+r.Duration)
			}
		}
	}
	for i, bin := range bins {
		r := res[i]
		b.ReportMetric(pct(r.init, 50), "init-p50-ms-"+bin.name)
		b.ReportMetric(pct(r.empty, 50), "first-response-empty-p50-ms-"+bin.name)
		b.ReportMetric(pct(r.run, 50), "first-response-1step-p50-ms-"+bin.name)
		b.Logf("%s (%s): %d cold starts: init min %.1f p50 %.1f p90 %.1f ms; first response, empty batch: p50 %.1f p90 %.1f ms; "+
			"first response, one 1-step run: p50 %.1f p90 %.1f ms", bin.name, runtime.GOARCH, len(r.init),
			pct(r.init, 0), pct(r.init, 50), pct(r.init, 90), pct(r.empty, 50), pct(r.empty, 90), pct(r.run, 50), pct(r.run, 90))
	}
}
