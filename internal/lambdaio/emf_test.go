package lambdaio_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

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

func TestEMFFlush(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	m := lambdaio.NewEMF(&buf, "Skein/test", map[string]string{"FunctionName": "flow"})
	now := time.UnixMilli(1_800_000_000_000)
	if err := m.Flush(now); err != nil || buf.Len() != 0 {
		t.Fatalf("an empty flush wrote %q (%v)", buf.String(), err)
	}
	m.Count("RunsStarted", 2)
	m.Count("RunsStarted", 1)
	for i := range 130 {
		m.Duration("StepLatency", time.Duration(i)*time.Millisecond)
	}
	if err := m.Flush(now); err != nil {
		t.Fatal(err)
	}
	docs := parseEMF(t, buf.Bytes())
	if len(docs) != 2 {
		t.Fatalf("%d lines; want 2 (100 values per line at most):\n%s", len(docs), buf.String())
	}
	first, second := docs[0], docs[1]
	dir := first.AWS.CloudWatchMetrics[0]
	if first.AWS.Timestamp != now.UnixMilli() || dir.Namespace != "Skein/test" || len(dir.Dimensions) != 1 || dir.Dimensions[0][0] != "FunctionName" {
		t.Errorf("directive = %+v", first.AWS)
	}
	var started int
	var firstValues, secondValues []float64
	_ = json.Unmarshal(first.Values["RunsStarted"], &started)
	_ = json.Unmarshal(first.Values["StepLatency"], &firstValues)
	_ = json.Unmarshal(second.Values["StepLatency"], &secondValues)
	if started != 3 || len(firstValues) != 100 || len(secondValues) != 30 || secondValues[29] != 129 {
		t.Errorf("RunsStarted %d, latencies %d + %d (last %v)", started, len(firstValues), len(secondValues), secondValues)
	}
	if _, ok := second.Values["RunsStarted"]; ok {
		t.Error("the counter was written twice")
	}
	buf.Reset()
	if err := m.Flush(now); err != nil || buf.Len() != 0 {
		t.Errorf("a flush after a flush wrote %q", buf.String())
	}
}
