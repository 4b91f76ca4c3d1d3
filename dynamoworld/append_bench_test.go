package dynamoworld

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// BenchmarkSerialStepCPU is the World's own work for one serial step (state
// machine, encoding, building the transaction) against a DynamoDB that
// answers at once: what a commit costs beyond the round trip.
func BenchmarkSerialStepCPU(b *testing.B) {
	ddb := &fakeDDB{}
	w, err := New(b.Context(), Config{
		DynamoDB: ddb, SQS: &fakeSQS{}, S3: newFakeS3(), streams: fakeStreams{},
		Table: "skein-test", QueueURL: "http://q/1", Bucket: "skein-test", skipCheck: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	id := testIDs.New(world.PrefixRun)
	if _, err := appendEvents(w, id, ev("", &world.RunCreated{WorkflowName: "wf"}), ev("", &world.RunStarted{})); err != nil {
		b.Fatal(err)
	}
	payload := json.RawMessage(`{"step":1,"data":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)
	prev := ""
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ddb.writes = ddb.writes[:0]
		next := testIDs.New(world.PrefixStep)
		evs := []world.EventInput{}
		if prev != "" {
			evs = append(evs, ev(prev, &world.StepCompleted{Result: payload}))
		}
		evs = append(evs, ev(next, &world.StepCreated{StepName: fmt.Sprint("s", i), Input: payload}), ev(next, &world.StepStarted{LeaseTTL: time.Minute}))
		if _, err := appendEvents(w, id, evs...); err != nil {
			b.Fatal(err)
		}
		prev = next
	}
}
