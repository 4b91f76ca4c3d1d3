package dynamoworld_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/dynamoworld/dynamotest"
	"github.com/skeinflow/skein/world"
)

// sumFixture is a plain (not sealed) run on the emulators, with a step,
// and a way to edit its items behind the World's back, as a tool would.
type sumFixture struct {
	t     *testing.T
	c     dynamoworld.Clients
	table string
	fresh func() *dynamoworld.World // a World that caches nothing
	run   string
	step  string
}

func newSumFixture(t *testing.T) *sumFixture {
	t.Helper()
	ctx := context.Background()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	res, url := dynamotest.NewResources(t, c)
	f := &sumFixture{t: t, c: c, table: res.Table, run: ids.New(world.PrefixRun), step: ids.New(world.PrefixStep)}
	f.fresh = func() *dynamoworld.World {
		cfg := dynamotest.Config(c, res, url)
		cfg.CacheRuns = -1 // every read from the table
		w, err := dynamoworld.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Close() })
		return w
	}
	w := f.fresh()
	mustAppend(t, w, f.run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Input: []byte(`{"order":"o-1"}`)}}, world.EventInput{Data: &world.RunStarted{}},
		world.EventInput{CorrelationID: f.step, Data: &world.StepCreated{StepName: "charge", Input: []byte(`{"cents":500}`)}})
	mustAppend(t, w, f.run, world.EventInput{CorrelationID: f.step, Data: &world.StepStarted{}})
	mustAppend(t, w, f.run, world.EventInput{CorrelationID: f.step, Data: &world.StepCompleted{Result: []byte(`{"chargeId":"ch_1","cents":500}`)}})
	mustAppend(t, w, f.run, world.EventInput{Data: &world.RunCompleted{Output: []byte(`{"shipped":true}`)}})
	return f
}

func (f *sumFixture) key(sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "r#" + f.run}, "sk": &types.AttributeValueMemberS{Value: sk}}
}

// items returns the run's items by sort key.
func (f *sumFixture) items() map[string]map[string]types.AttributeValue {
	f.t.Helper()
	q, err := f.c.DynamoDB.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(f.table), KeyConditionExpression: aws.String("pk = :p"), ConsistentRead: aws.Bool(true),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "r#" + f.run}},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]map[string]types.AttributeValue{}
	for _, it := range q.Items {
		out[it["sk"].(*types.AttributeValueMemberS).Value] = it
	}
	return out
}

// binary returns a B attribute of an item.
func (f *sumFixture) binary(sk, attr string) []byte {
	f.t.Helper()
	b, ok := f.items()[sk][attr].(*types.AttributeValueMemberB)
	if !ok {
		f.t.Fatalf("item %s has no binary %s", sk, attr)
	}
	return bytes.Clone(b.Value)
}

// set writes a B attribute (nil: removes the attribute).
func (f *sumFixture) set(sk, attr string, b []byte) {
	f.t.Helper()
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(f.table), Key: f.key(sk),
		UpdateExpression: aws.String("REMOVE #a"), ExpressionAttributeNames: map[string]string{"#a": attr},
	}
	if b != nil {
		in.UpdateExpression = aws.String("SET #a = :v")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": &types.AttributeValueMemberB{Value: b}}
	}
	if _, err := f.c.DynamoDB.UpdateItem(context.Background(), in); err != nil {
		f.t.Fatal(err)
	}
}

// reads is what a fresh reader does with each kind of item.
func (f *sumFixture) reads(w *dynamoworld.World) map[string]func() error {
	ctx := context.Background()
	return map[string]func() error{
		"GetRun": func() error { _, err := w.GetRun(ctx, &world.GetRunParams{RunID: f.run}); return err },
		"GetStep": func() error {
			_, err := w.GetStep(ctx, &world.GetStepParams{RunID: f.run, StepID: f.step})
			return err
		},
		"ListEvents": func() error {
			_, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: f.run, Pagination: world.Pagination{Limit: 100}})
			return err
		},
		"ListEvents, newest first": func() error {
			_, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: f.run, Pagination: world.Pagination{Limit: 100, Descending: true}})
			return err
		},
	}
}

func (f *sumFixture) wantCorrupt(what, read string, err error) {
	f.t.Helper()
	if !errors.Is(err, world.ErrCorrupt) || !strings.Contains(err.Error(), f.run) {
		f.t.Errorf("%s: %s: %v, want world.ErrCorrupt naming run %s", what, read, err, f.run)
	}
}

// sweepBits is how many bits of each attribute TestItemChecksumSweep flips:
// SKEIN_CHECKSUM_SWEEP_BITS (0: every bit), else the first 96 bits and the
// last 32.
func sweepBits(t *testing.T, n int) []int {
	if s := os.Getenv("SKEIN_CHECKSUM_SWEEP_BITS"); s != "" {
		k, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("SKEIN_CHECKSUM_SWEEP_BITS=%q: %v", s, err)
		}
		if k == 0 || k >= n {
			k = n
		}
		return spread(n, k)
	}
	var bits []int
	for b := range n {
		if b < 96 || b >= n-32 {
			bits = append(bits, b)
		}
	}
	return bits
}

// spread picks k of n bits evenly.
func spread(n, k int) []int {
	bits := make([]int, k)
	for i := range k {
		bits[i] = i * n / k
	}
	return bits
}

// TestItemChecksumSweep: single-bit flips of a plain run's stored bytes in
// DynamoDB (the run's output on its body, a commit's event blob, a step's
// result), written behind the World's back, are world.ErrCorrupt naming the
// run to a fresh reader, never data; restored, the run reads again. The
// flips sampled by default; SKEIN_CHECKSUM_SWEEP_BITS=0 flips every bit.
func TestItemChecksumSweep(t *testing.T) {
	f := newSumFixture(t)
	w := f.fresh()
	reads := f.reads(w)
	commit := "e#00000000000000000004" // the commit of step_completed
	for _, tc := range []struct {
		sk, attr, read string
	}{
		{"e~b", "out", "GetRun"},
		{commit, "d", "ListEvents"},
		{commit, "d", "ListEvents, newest first"},
		{"s#" + f.step, "out", "GetStep"},
	} {
		orig := f.binary(tc.sk, tc.attr)
		tried, silent := 0, 0
		for _, bit := range sweepBits(t, len(orig)*8) {
			b := bytes.Clone(orig)
			b[bit/8] ^= 1 << (bit % 8)
			f.set(tc.sk, tc.attr, b)
			tried++
			if err := reads[tc.read](); !errors.Is(err, world.ErrCorrupt) {
				silent++
				f.wantCorrupt("bit "+strconv.Itoa(bit)+" of "+tc.sk+"."+tc.attr, tc.read, err)
			}
		}
		f.set(tc.sk, tc.attr, orig)
		if err := reads[tc.read](); err != nil {
			t.Fatalf("%s.%s restored: %s: %v", tc.sk, tc.attr, tc.read, err)
		}
		t.Logf("%s.%s (%d bytes) by %s: %d single-bit flips, %d silent", tc.sk, tc.attr, len(orig), tc.read, tried, silent)
	}
}

// TestItemChecksumEdits: the trial's edits of a plain run (its output, a
// step's result, a result inside a commit's blob, a byte flipped), a value
// moved from another item with its checksum, and the checksum removed from
// an item of a run written with checksums are each world.ErrCorrupt naming
// the run, for every read of the item.
func TestItemChecksumEdits(t *testing.T) {
	f := newSumFixture(t)
	w := f.fresh()
	reads := f.reads(w)
	commit := "e#00000000000000000004"
	items := f.items()
	stepSK := "s#" + f.step
	edit := func(sk, attr string, b []byte) func() {
		return func() { f.set(sk, attr, b) }
	}
	origOut, origFirst := f.binary("e~b", "out"), f.binary("e#00000000000000000000", "d")
	flip10 := bytes.Clone(origFirst)
	flip10[10] ^= 0x01
	blob := f.binary(commit, "d")
	edited := bytes.Replace(blob, []byte(`ch_1`), []byte(`ch_9`), 1)
	if bytes.Equal(edited, blob) {
		t.Fatalf("the commit's blob %s holds no ch_1", blob)
	}
	moveSum := func() {
		// The step's input and its checksum, copied onto the body's output
		// and checksum: another item's valid pair.
		f.set("e~b", "out", f.binary(stepSK, "in"))
		f.set("e~b", "ck", items[stepSK]["ck"].(*types.AttributeValueMemberB).Value)
	}
	for _, tc := range []struct {
		name  string
		do    func()
		reads []string
		undo  func()
	}{
		{"run output edited", edit("e~b", "out", []byte(`{"shipped":false}`)), []string{"GetRun"}, edit("e~b", "out", f.binary("e~b", "out"))},
		{"step result edited", edit(stepSK, "out", []byte(`{"chargeId":"ch_evil","cents":1}`)), []string{"GetStep"}, edit(stepSK, "out", f.binary(stepSK, "out"))},
		{"result inside a commit edited", edit(commit, "d", edited), []string{"ListEvents", "ListEvents, newest first"}, edit(commit, "d", blob)},
		{"byte 10 of the first commit flipped", edit("e#00000000000000000000", "d", flip10), []string{"ListEvents", "ListEvents, newest first"}, edit("e#00000000000000000000", "d", f.binary("e#00000000000000000000", "d"))},
		{"value and checksum moved from another item", moveSum, []string{"GetRun"}, func() {
			f.set("e~b", "out", origOut)
			f.set("e~b", "ck", items["e~b"]["ck"].(*types.AttributeValueMemberB).Value)
		}},
		{"run output edited, its checksum removed", func() {
			f.set("e~b", "out", []byte(`{"shipped":false}`))
			f.set("e~b", "ck", nil)
		}, []string{"GetRun"}, func() {
			f.set("e~b", "out", origOut)
			f.set("e~b", "ck", items["e~b"]["ck"].(*types.AttributeValueMemberB).Value)
		}},
		{"first commit edited, its checksum removed", func() {
			f.set("e#00000000000000000000", "d", flip10)
			f.set("e#00000000000000000000", "ck", nil)
		}, []string{"ListEvents", "ListEvents, newest first"}, func() {
			f.set("e#00000000000000000000", "d", origFirst)
			f.set("e#00000000000000000000", "ck", items["e#00000000000000000000"]["ck"].(*types.AttributeValueMemberB).Value)
		}},
	} {
		tc.do()
		for _, r := range tc.reads {
			f.wantCorrupt(tc.name, r, reads[r]())
		}
		tc.undo()
		for _, r := range tc.reads {
			if err := reads[r](); err != nil {
				t.Fatalf("%s, restored: %s: %v", tc.name, r, err)
			}
		}
	}
}

// TestItemChecksumOldItems: items written before checksums (no ck on any
// item, no cs on the head) still read, as they were written.
func TestItemChecksumOldItems(t *testing.T) {
	f := newSumFixture(t)
	for sk := range f.items() {
		f.set(sk, "ck", nil)
		if sk == "e~" {
			in := &dynamodb.UpdateItemInput{
				TableName: aws.String(f.table), Key: f.key(sk),
				UpdateExpression: aws.String("REMOVE cs"),
			}
			if _, err := f.c.DynamoDB.UpdateItem(context.Background(), in); err != nil {
				t.Fatal(err)
			}
		}
	}
	w := f.fresh()
	for name, read := range f.reads(w) {
		if err := read(); err != nil {
			t.Errorf("%s of a run written without checksums: %v", name, err)
		}
	}
	r, err := w.GetRun(context.Background(), &world.GetRunParams{RunID: f.run})
	if err != nil || string(r.Output) != `{"shipped":true}` {
		t.Fatalf("GetRun: %s, %v", r.Output, err)
	}
	var out json.RawMessage
	st, err := w.GetStep(context.Background(), &world.GetStepParams{RunID: f.run, StepID: f.step})
	if err != nil || json.Unmarshal(st.Output, &out) != nil {
		t.Fatalf("GetStep: %+v, %v", st, err)
	}
}

// TestResealAgrees: dynamotest.Reseal computes every item's checksum as the
// World wrote it (the encrypt tests rely on it to reach the sealed layer).
func TestResealAgrees(t *testing.T) {
	f := newSumFixture(t)
	for sk, it := range f.items() {
		want, ok := it["ck"].(*types.AttributeValueMemberB)
		if !ok {
			t.Errorf("item %s has no checksum", sk)
			continue
		}
		c := maps.Clone(it)
		delete(c, "ck")
		dynamotest.Reseal(c)
		if got := c["ck"].(*types.AttributeValueMemberB).Value; !bytes.Equal(got, want.Value) {
			t.Errorf("item %s: Reseal %x, the World %x", sk, got, want.Value)
		}
	}
}
