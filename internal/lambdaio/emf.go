// Package lambdaio is what Skein's Lambda functions write for CloudWatch:
// metrics in Embedded Metric Format and JSON log lines in the shape of
// Lambda's JSON log format.
package lambdaio

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"
)

// EMF is a worker.Metrics that writes CloudWatch Embedded Metric Format:
// it aggregates what it is told and, on Flush (the flow handler flushes
// after each batch), writes JSON lines that CloudWatch Logs turns into
// metrics in Namespace with Dimensions, with no API call and no latency
// added to the invocation. Counters are summed per flush; durations are
// kept as values (milliseconds), at most 100 per line as the format allows.
type EMF struct {
	w          io.Writer
	namespace  string
	dimensions map[string]string

	mu     sync.Mutex
	counts map[string]int
	values map[string][]float64
}

// emfMaxValues is the most values one metric may carry in one EMF line.
const emfMaxValues = 100

// NewEMF returns an EMF writing to w (stdout on Lambda) in namespace, every
// metric with the given dimensions (such as the function's name).
func NewEMF(w io.Writer, namespace string, dimensions map[string]string) *EMF {
	return &EMF{w: w, namespace: namespace, dimensions: maps.Clone(dimensions),
		counts: map[string]int{}, values: map[string][]float64{}}
}

// Count adds n to the counter name.
func (m *EMF) Count(name string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts[name] += n
}

// Duration records one observation of name, in milliseconds.
func (m *EMF) Duration(name string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.values[name] = append(m.values[name], float64(d.Microseconds())/1000)
}

// Flush writes what was recorded since the last flush, stamped now, and
// forgets it. Nothing recorded writes nothing.
func (m *EMF) Flush(now time.Time) error { return m.FlushFor(now, "") }

// FlushFor is Flush with the Lambda request ID the metrics belong to, which
// each line carries as the property requestId (a log field, not a metric),
// as the handlers' log records do.
func (m *EMF) FlushFor(now time.Time, requestID string) error {
	m.mu.Lock()
	counts, values := m.counts, m.values
	m.counts, m.values = map[string]int{}, map[string][]float64{}
	m.mu.Unlock()
	for _, line := range m.lines(now, requestID, counts, values) {
		if _, err := m.w.Write(line); err != nil {
			return fmt.Errorf("handler: write metrics: %w", err)
		}
	}
	return nil
}

// lines renders counts and values as EMF lines: the counters and the first
// 100 values of each duration in the first, further values in more lines.
func (m *EMF) lines(now time.Time, requestID string, counts map[string]int, values map[string][]float64) [][]byte {
	var out [][]byte
	for first := true; first || len(values) > 0; first = false {
		doc := map[string]any{}
		var defs []map[string]string
		if first {
			for _, name := range slices.Sorted(maps.Keys(counts)) {
				doc[name] = counts[name]
				defs = append(defs, map[string]string{"Name": name, "Unit": "Count"})
			}
		}
		rest := map[string][]float64{}
		for _, name := range slices.Sorted(maps.Keys(values)) {
			v := values[name]
			if len(v) > emfMaxValues {
				rest[name], v = v[emfMaxValues:], v[:emfMaxValues]
			}
			doc[name] = v
			defs = append(defs, map[string]string{"Name": name, "Unit": "Milliseconds"})
		}
		values = rest
		if len(defs) == 0 {
			break
		}
		dimKeys := slices.Sorted(maps.Keys(m.dimensions))
		for _, k := range dimKeys {
			doc[k] = m.dimensions[k]
		}
		if requestID != "" {
			doc["requestId"] = requestID
		}
		doc["_aws"] = map[string]any{
			"Timestamp": now.UnixMilli(),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace": m.namespace, "Dimensions": [][]string{dimKeys}, "Metrics": defs,
			}},
		}
		b, err := json.Marshal(doc)
		if err != nil {
			continue // numbers and strings only: cannot happen
		}
		out = append(out, append(b, '\n'))
	}
	return out
}
