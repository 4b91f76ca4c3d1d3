package bench

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// BenchmarkDynamoPartitions is the partition model: each op is one run of a
// realistic mix (created and started; 10 serial steps; a webhook created,
// received and disposed; a sleep; completed), written through the World to
// DynamoDB Local. The meter replays every write on a shadow of the items'
// index keys and counts the write units per partition key value of the
// table and of each index (dynamotest.Meter.Partitions). DynamoDB takes
// about 1,000 write units a second on one key value, so the highest
// sustainable rate of runs is 1,000 / (the units one run puts on the
// hottest value every run shares): computed for the keys as written
// (sharded: a run's units on a sharded key fall on one of its 32 values,
// so the shared load per run is the key's units per run / 32, the hash
// being uniform at these rates) and as if each key were one value
// (unsharded: the format before the shards). A run's own partition (pk
// r#<run>) bounds one run's step rate, not the table's.
func BenchmarkDynamoPartitions(b *testing.B) {
	const steps = 10
	db := newDynBench(b)
	db.reset()
	b.ResetTimer()
	for range b.N {
		run := dynRun(b, db.w)
		prev := ""
		for k := range steps {
			next := dynIDs.New(world.PrefixStep)
			dynAppend(b, db.w, run, serialStep(prev, next, k)...)
			prev = next
		}
		hook, wait := dynIDs.New(world.PrefixHook), dynIDs.New(world.PrefixWait)
		dynAppend(b, db.w, run, world.EventInput{CorrelationID: prev, Data: &world.StepCompleted{Result: json.RawMessage(`1`)}},
			world.EventInput{CorrelationID: hook, Data: &world.HookCreated{Token: "tok-" + hook, IsWebhook: true}})
		dynAppend(b, db.w, run, world.EventInput{CorrelationID: hook, Data: &world.HookReceived{Payload: json.RawMessage(`{"ok":true}`)}})
		dynAppend(b, db.w, run, world.EventInput{CorrelationID: hook, Data: &world.HookDisposed{}},
			world.EventInput{CorrelationID: wait, Data: &world.WaitCreated{ResumeAt: time.Now()}})
		dynAppend(b, db.w, run, world.EventInput{CorrelationID: wait, Data: &world.WaitCompleted{}})
		dynAppend(b, db.w, run, world.EventInput{Data: &world.RunCompleted{Output: json.RawMessage(`"done"`)}})
	}
	b.StopTimer()
	parts := db.m.Partitions()
	m := partitionModel(parts, b.N)
	b.ReportMetric(m.shardedRuns, "runs/s-sharded")
	b.ReportMetric(m.unshardedRuns, "runs/s-unsharded")
	b.ReportMetric(m.shardedRuns*steps, "steps/s-sharded")
	b.ReportMetric(m.unshardedRuns*steps, "steps/s-unsharded")
	b.ReportMetric(m.runPartition, "run-pk-wu/run")
	total := 0.0
	for _, u := range parts {
		total += u
	}
	b.ReportMetric(total/float64(b.N), "all-wu/run")
	for _, l := range m.lines {
		b.Log(l)
	}
}

// shardSuffix finds a sharded index key's shard: run07, hook07, wf07#x,
// st07#x.
var shardSuffix = regexp.MustCompile(`^(gs\d) (run|hook|wf|st)(\d\d)(#.*)?$`)

type partModel struct {
	shardedRuns, unshardedRuns float64
	runPartition               float64 // units on the busiest run's own partition
	lines                      []string
}

// partitionModel computes the model from the units per partition key
// value of n runs.
func partitionModel(parts map[string]float64, n int) partModel {
	base := map[string]float64{} // unsharded key -> units
	sharded := map[string]bool{} // base keys written sharded
	var runPK float64
	for p, u := range parts {
		switch {
		case strings.HasPrefix(p, "table r#"):
			runPK = max(runPK, u)
		case strings.HasPrefix(p, "table "):
			// a hook's, token's or key's own item: one per hook or run
		default:
			k := p
			if m := shardSuffix.FindStringSubmatch(p); m != nil {
				sep := ""
				if m[4] != "" {
					sep = "#"
				}
				k = m[1] + " " + m[2] + sep + strings.TrimPrefix(m[4], "#")
				sharded[k] = true
			}
			base[k] += u
		}
	}
	out := partModel{runPartition: runPK}
	hotS, hotU := 0.0, 0.0
	keys := make([]string, 0, len(base))
	for k := range base {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if base[a] != base[b] {
			if base[a] > base[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, k := range keys {
		perRun := base[k] / float64(n)
		shared := perRun
		if sharded[k] {
			shared = perRun / 32
		}
		hotU = max(hotU, perRun)
		hotS = max(hotS, shared)
		out.lines = append(out.lines, fmt.Sprintf("%-24s %5.2f units a run, %7.4f on its hottest value: %8.0f runs/s (unsharded %6.0f)", k, perRun, shared, 1000/shared, 1000/perRun))
	}
	out.shardedRuns, out.unshardedRuns = 1000/hotS, 1000/hotU
	return out
}
