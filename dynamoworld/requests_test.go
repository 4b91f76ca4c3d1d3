package dynamoworld_test

import (
	"context"
	"encoding/json"
	"github.com/skeinflow/skein/internal/knobs"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/testflows"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/world"
)

// TestColdRunRequests counts the DynamoDB and S3 requests (and prices
// them) of the message that runs a workflow from start to end on a World
// that has never seen the run, as a cold Lambda invocation does: a client
// in another process started it. The bounds are what the World's cache of
// a run read from its log (doc.go, Priming) and its registered streams
// (Streams) give: one Query, the commits, no S3 listing, new steps created
// lazily (4 write units a serial step, not 6); the counts are logged.
func TestColdRunRequests(t *testing.T) {
	dynamotest.Require(t)
	ctx := context.Background()
	clean := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, clean)
	reg, err := testflows.Registry()
	if err != nil {
		t.Fatal(err)
	}
	starter, err := dynamoworld.New(ctx, dynamotest.Config(clean, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer starter.Close()
	client, err := client.New(client.Config{World: starter, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		start func() (string, error)
		// the most requests the run's message may take, and write units
		ddb, s3List int
		wru         float64
	}{
		// Each bound counts one Query at the run's end: it reads the run's
		// entities to check their write marks against the log
		// (RELIABILITY.md, Missing items); and one GetItem beside the read
		// of the log, of the run lease's mark of the log's end (floors.go).
		{"one step", func() (string, error) {
			run, err := testflows.Serial.Start(ctx, client, 1)
			return idOf(run, err)
		}, 7, 0, 16},
		{"three steps", func() (string, error) {
			run, err := testflows.Serial.Start(ctx, client, 3)
			return idOf(run, err)
		}, 9, 0, 24},
		{"hundred steps", func() (string, error) {
			run, err := testflows.Serial.Start(ctx, client, 100)
			return idOf(run, err)
		}, 106, 0, 450},
		{"one step writing a stream", func() (string, error) {
			run, err := testflows.Streamer.Start(ctx, client, testflows.Emission{Chunks: 3})
			return idOf(run, err)
			// The stream opens in one transaction (its marker and the
			// run's count of streams, Limits.MaxStreams): the request the
			// marker took before, a write unit more.
		}, 10, 0, 19},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &dynamotest.Meter{}
			c := dynamotest.Clients(t, dynamoworld.ClientOptions{}, m.Add)
			cfg := dynamotest.Config(c, r, url)
			w, err := dynamoworld.New(ctx, cfg, knobs.WithSkipCheck()) // a cold process: nothing cached
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			// The periodic polls (new events, the run's cancellation) read once a
			// second whatever the run does: a minute keeps them out of a count
			// that would otherwise depend on how fast the machine is.
			p, err := worker.NewProcessor(worker.Config{World: w, Registry: reg},
				knobs.WithLinger(-1), knobs.WithEventPollInterval(time.Minute), knobs.WithRunPollInterval(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			runID, err := tc.start()
			if err != nil {
				t.Fatal(err)
			}
			body, err := world.EncodeMessage(world.Message{RunID: runID})
			if err != nil {
				t.Fatal(err)
			}
			m.Reset()
			if err := p.Process(ctx, body, 1); err != nil {
				t.Fatal(err)
			}
			run, err := starter.GetRun(ctx, &world.GetRunParams{RunID: runID})
			if err != nil || run.Status != world.RunStatusCompleted {
				t.Fatalf("run after its message: %+v, %v", run, err)
			}
			u := m.Units(dynamotest.StoredSizes(t, clean, r.Table, runID))
			// A single DeleteItem (the run lease's release) is 1 write unit.
			wru, rru := u.WRU+float64(m.Count("DynamoDB/DeleteItem")), u.RRU
			ddb, list := m.Count("DynamoDB"), m.Count("S3/ListObjectsV2")
			t.Logf("%s: %d DynamoDB requests, %d S3 requests (%d ListObjectsV2); %.0f WRU, %.0f RRU; %s",
				tc.name, ddb, m.Count("S3"), list, wru, rru, m.Summary())
			if ddb > tc.ddb || list > tc.s3List || wru > tc.wru {
				t.Errorf("%s: %d DynamoDB requests, %d S3 listings and %.0f write units, want at most %d, %d and %.0f", tc.name, ddb, list, wru, tc.ddb, tc.s3List, tc.wru)
			}
			if tc.name == "one step writing a stream" {
				names, err := starter.ListStreams(ctx, &world.ListStreamsParams{RunID: runID})
				if err != nil || len(names) != 1 {
					t.Fatalf("ListStreams: %v, %v", names, err)
				}
				info, err := starter.StreamInfo(ctx, &world.StreamInfoParams{RunID: runID, Name: names[0]})
				if err != nil || !info.Done || info.TailIndex != 2 {
					t.Fatalf("the run's stream after its end: %+v, %v; want 3 chunks, closed", info, err)
				}
			}
		})
	}
}

func idOf[O any](run *client.Run[O], err error) (string, error) {
	if err != nil {
		return "", err
	}
	return run.ID(), nil
}

// TestFanOutRequests counts the DynamoDB requests and write units of a
// fan-out of 50 steps committed by the World that created the run, as the
// engine commits it: the steps created and started in one Append, each
// completion in its own, then the run's end (a Query of the run's entities
// first, which checks their write marks). The counts are logged; the
// bounds are what the World did when the test was written, and that
// Query.
func TestFanOutRequests(t *testing.T) {
	dynamotest.Require(t)
	ctx := context.Background()
	m := &dynamotest.Meter{}
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{}, m.Add)
	r, url := dynamotest.NewResources(t, c)
	w, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ids := world.NewIDSource(nil, nil)
	runID := ids.New(world.PrefixRun)
	appendEvs := func(evs ...world.EventInput) {
		t.Helper()
		if _, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: evs}); err != nil {
			t.Fatal(err)
		}
	}
	payload := json.RawMessage(`{"data":"` + strings.Repeat("x", 80) + `"}`)
	m.Reset()
	appendEvs(world.EventInput{Data: &world.RunCreated{WorkflowName: "fan-out", Input: payload}}, world.EventInput{Data: &world.RunStarted{}})
	const n = 50
	steps := make([]string, n)
	var fan []world.EventInput
	for i := range steps {
		steps[i] = ids.New(world.PrefixStep)
		fan = append(fan,
			world.EventInput{CorrelationID: steps[i], Data: &world.StepCreated{StepName: "square", Input: payload}},
			world.EventInput{CorrelationID: steps[i], Data: &world.StepStarted{LeaseTTL: time.Minute}})
	}
	appendEvs(fan...)
	for _, id := range steps {
		appendEvs(world.EventInput{CorrelationID: id, Data: &world.StepCompleted{Result: payload}})
	}
	appendEvs(world.EventInput{Data: &world.RunCompleted{Output: payload}})
	ddb, summary := m.Count("DynamoDB"), m.Summary() // before the sizes are read
	u := m.Units(dynamotest.StoredSizes(t, c, r.Table, runID))
	t.Logf("fan-out of %d: %d DynamoDB requests, %.0f WRU, %.0f RRU; %s", n, ddb, u.WRU, u.RRU, summary)
	if ddb > n+4 || u.WRU > 352 {
		t.Errorf("fan-out of %d: %d DynamoDB requests and %.0f write units, want at most %d and 352", n, ddb, u.WRU, n+4)
	}
}
