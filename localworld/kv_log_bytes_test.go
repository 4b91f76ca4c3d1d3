package localworld

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/skeinflow/skein/world"
)

// BenchmarkSerialStepBytes breaks a serial step's share of a log store
// down by bucket. It appends the commits of one run of b.N serial steps the
// way the engine does (one Append per step: step k completed, step k+1
// created and started, with the engine's small input, digest and result),
// then reads the log file back and reports, per step, the bytes of the
// commit records (B/step: record headers and operations) and of each
// bucket's operations (op code, bucket, key and value, with their
// lengths), and the record headers (hdr-B/step).
//
//	go test -run '^$' -bench SerialStepBytes -benchtime 10000x ./localworld/
func BenchmarkSerialStepBytes(b *testing.B) {
	path := filepath.Join(b.TempDir(), "steps.db")
	w, err := Open(Config{Path: path, Sync: SyncNone})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	runID := testIDs.New(world.PrefixRun)
	step := func() string { return testIDs.New(world.PrefixStep) }
	created := func(id string, i int) world.EventInput {
		in := json.RawMessage(strconv.Itoa(i))
		return ev(id, &world.StepCreated{StepName: "noop", Input: in, InputDigest: "f0571d121bc4aafe"})
	}
	cur := step()
	first := []world.EventInput{ev("", &world.RunCreated{WorkflowName: "seq", Input: json.RawMessage("10000")}),
		ev("", &world.RunStarted{}), created(cur, 0), ev(cur, &world.StepStarted{})}
	if _, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: first}); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	before := logBytes(b, path)
	if w, err = Open(Config{Path: path, Sync: SyncNone}); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		next := step()
		evs := []world.EventInput{ev(cur, &world.StepCompleted{Result: json.RawMessage("1")}), created(next, i), ev(next, &world.StepStarted{})}
		if _, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: evs}); err != nil {
			b.Fatal(err)
		}
		cur = next
	}
	b.StopTimer()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	after := logBytes(b, path)
	per := func(v int64) float64 { return float64(v) / float64(i) }
	b.ReportMetric(per(after.total-before.total), "B/step")
	b.ReportMetric(per(after.headers-before.headers), "hdr-B/step")
	for bk := range numBuckets {
		if d := after.buckets[bk] - before.buckets[bk]; d != 0 {
			b.ReportMetric(per(d), bk.String()+"-B/step")
		}
	}
}

// logSizes is what a log file's commit records hold, in bytes.
type logSizes struct {
	total   int64 // commit records, headers included
	headers int64 // record headers and kind bytes
	buckets [numBuckets]int64
}

// logBytes reads the commit records of the log file at path.
func logBytes(tb testing.TB, path string) logSizes {
	tb.Helper()
	buf, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	h, err := decodeLogHeader(buf)
	if err != nil {
		tb.Fatal(err)
	}
	var s logSizes
	for off := int64(h.snapEnd); off < int64(len(buf)); {
		rec, bad := readRecord(buf, off)
		if bad != "" {
			tb.Fatalf("record at %d: %s", off, bad)
		}
		s.total += rec.end - off
		s.headers += recHeaderSize + 1
		for ops := rec.ops; len(ops) > 0; {
			n, bk := len(ops), bucketID(ops[1])
			k, rest, _ := readBytes(ops[2:])
			if ops[0] == opPut {
				_, rest, _ = readBytes(rest)
			}
			if len(k) == 0 {
				tb.Fatalf("record at %d: bad operation", off)
			}
			ops = rest
			s.buckets[bk] += int64(n - len(ops))
		}
		off = rec.end
	}
	return s
}
