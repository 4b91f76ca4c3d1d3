package handler_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/lambdaio"
)

// emfDoc is one Embedded Metric Format line.
type emfDoc struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
	Values map[string]json.RawMessage `json:"-"`
}

func parseEMF(t *testing.T, out []byte) []emfDoc {
	t.Helper()
	var docs []emfDoc
	for line := range strings.Lines(string(out)) {
		var d emfDoc
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("EMF line is not JSON: %s", line)
		}
		if err := json.Unmarshal([]byte(line), &d.Values); err != nil {
			t.Fatal(err)
		}
		if len(d.AWS.CloudWatchMetrics) != 1 {
			t.Fatalf("EMF line without one metric directive: %s", line)
		}
		// Every metric the directive names has its value in the line.
		for _, m := range d.AWS.CloudWatchMetrics[0].Metrics {
			if _, ok := d.Values[m.Name]; !ok {
				t.Errorf("metric %s declared without a value: %s", m.Name, line)
			}
		}
		for _, dims := range d.AWS.CloudWatchMetrics[0].Dimensions {
			for _, k := range dims {
				if _, ok := d.Values[k]; !ok {
					t.Errorf("dimension %s without a value: %s", k, line)
				}
			}
		}
		docs = append(docs, d)
	}
	return docs
}

// TestSQSMetrics: the flow handler sends the engine's counts and each
// message's queue lag to Config.Metrics and flushes them after the batch.
func TestSQSMetrics(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	b := setup(t, setupOptions{config: func(c *handler.Config) {
		c.Worker.Engine.Metrics = lambdaio.NewEMF(&buf, "Skein/test", map[string]string{"FunctionName": "flow"})
	}})
	ctx := context.Background()
	run, err := serial.Start(ctx, b.client, 3)
	if err != nil {
		t.Fatal(err)
	}
	b.drive(t, run.ID(), 10)
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
	buf.mu.Lock()
	out := append([]byte(nil), buf.b.Bytes()...)
	buf.mu.Unlock()
	counts := map[string]int{}
	lags := 0
	for _, d := range parseEMF(t, out) {
		for _, m := range d.AWS.CloudWatchMetrics[0].Metrics {
			switch m.Unit {
			case "Count":
				var n int
				_ = json.Unmarshal(d.Values[m.Name], &n)
				counts[m.Name] += n
			case "Milliseconds":
				var v []float64
				_ = json.Unmarshal(d.Values[m.Name], &v)
				if m.Name == engine.MetricQueueLag {
					lags += len(v)
				}
			}
		}
	}
	if counts[engine.MetricRunsStarted] != 1 || counts[engine.MetricRunsCompleted] != 1 || counts[engine.MetricStepAttempts] != 3 {
		t.Errorf("counts = %v; want one run started and completed, three step attempts", counts)
	}
	if lags == 0 {
		t.Error("no queue lag recorded")
	}
}
