package dynamoworld_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/knobs"
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
	big   string // a step whose input and result are claim-checked
}

func newSumFixture(t *testing.T) *sumFixture {
	t.Helper()
	ctx := context.Background()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	res, url := dynamotest.NewResources(t, c)
	f := &sumFixture{t: t, c: c, table: res.Table, run: ids.New(world.PrefixRun), step: ids.New(world.PrefixStep)}
	f.fresh = func() *dynamoworld.World {
		cfg := dynamotest.Config(c, res, url)
		w, err := dynamoworld.New(ctx, cfg, knobs.WithCacheRuns(-1)) // every read from the table
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
	// A step whose input and result are claim-checked: its item holds
	// their S3 keys.
	f.big = ids.New(world.PrefixStep)
	mustAppend(t, w, f.run, world.EventInput{CorrelationID: f.big, Data: &world.StepCreated{StepName: "label", Input: bigJSON("in", dynamoworld.DefaultClaimCheckThreshold+10)}})
	mustAppend(t, w, f.run, world.EventInput{CorrelationID: f.big, Data: &world.StepStarted{}})
	mustAppend(t, w, f.run, world.EventInput{CorrelationID: f.big, Data: &world.StepCompleted{Result: bigJSON("out", dynamoworld.DefaultClaimCheckThreshold+20)}})
	mustAppend(t, w, f.run, world.EventInput{Data: &world.RunCompleted{Output: []byte(`{"shipped":true}`)}})
	return f
}

// bigJSON is a JSON string of n bytes starting with tag.
func bigJSON(tag string, n int) []byte {
	return []byte(`"` + tag + strings.Repeat("x", n-2-len(tag)) + `"`)
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
	if b == nil {
		f.setAV(sk, attr, nil)
		return
	}
	f.setAV(sk, attr, &types.AttributeValueMemberB{Value: b})
}

// setAV writes an attribute as a tool would, behind the World's back (nil:
// removes it).
func (f *sumFixture) setAV(sk, attr string, v types.AttributeValue) {
	f.t.Helper()
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(f.table), Key: f.key(sk),
		UpdateExpression: aws.String("REMOVE #a"), ExpressionAttributeNames: map[string]string{"#a": attr},
	}
	if v != nil {
		in.UpdateExpression = aws.String("SET #a = :v")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": v}
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
		"GetStep (claim-checked)": func() error {
			_, err := w.GetStep(ctx, &world.GetStepParams{RunID: f.run, StepID: f.big})
			return err
		},
		"ListSteps": func() error {
			_, err := w.ListSteps(ctx, &world.ListStepsParams{RunID: f.run, Pagination: world.Pagination{Limit: 100}})
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
// moved from another item with its checksum, a claim-check key pointed at
// another object of the run, a checksum removed, a checksum and the item's
// mark removed, and a value removed without its checksum are each
// world.ErrCorrupt naming the run and the attribute, for every read of the
// item; restored, every read works again.
func TestItemChecksumEdits(t *testing.T) {
	f := newSumFixture(t)
	w := f.fresh()
	reads := f.reads(w)
	const first, commit = "e#00000000000000000000", "e#00000000000000000004" // run_created's, step_completed's
	stepSK, bigSK := "s#"+f.step, "s#"+f.big
	items := f.items()
	edit := func(sk, attr string, v types.AttributeValue) func() {
		return func() { f.setAV(sk, attr, v) }
	}
	restore := func(sk string, attrs ...string) func() {
		return func() {
			for _, a := range attrs {
				f.setAV(sk, a, items[sk][a])
			}
		}
	}
	b := func(s []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: s} }
	flip10 := f.binary(first, "d")
	flip10[10] ^= 0x01
	blob := f.binary(commit, "d")
	edited := bytes.Replace(blob, []byte(`ch_1`), []byte(`ch_9`), 1)
	if bytes.Equal(edited, blob) {
		t.Fatalf("the commit's blob %s holds no ch_1", blob)
	}
	both := func(steps ...func()) func() {
		return func() {
			for _, s := range steps {
				s()
			}
		}
	}
	for _, tc := range []struct {
		name, attr string
		do         func()
		reads      []string
		undo       func()
	}{
		{"run output edited", "out", edit("e~b", "out", b([]byte(`{"shipped":false}`))), []string{"GetRun"}, restore("e~b", "out")},
		{"step result edited", "out", edit(stepSK, "out", b([]byte(`{"chargeId":"ch_evil","cents":1}`))), []string{"GetStep", "ListSteps"}, restore(stepSK, "out")},
		{"result inside a commit edited", "d", edit(commit, "d", b(edited)), []string{"ListEvents", "ListEvents, newest first"}, restore(commit, "d")},
		{"byte 10 of the first commit flipped", "d", edit(first, "d", b(flip10)), []string{"ListEvents", "ListEvents, newest first"}, restore(first, "d")},
		{"value and checksum moved from another item", "out", both(edit("e~b", "out", items[stepSK]["in"]), edit("e~b", "kout", items[stepSK]["kin"])),
			[]string{"GetRun"}, restore("e~b", "out", "kout")},
		{"claim-check key pointed at the run's other object", "out", edit(bigSK, "out", items[bigSK]["in"]),
			[]string{"GetStep (claim-checked)", "ListSteps"}, restore(bigSK, "out")},
		{"run output edited, its checksum removed", "out", both(edit("e~b", "out", b([]byte(`{"shipped":false}`))), edit("e~b", "kout", nil)),
			[]string{"GetRun"}, restore("e~b", "out", "kout")},
		{"step result's checksum removed", "out", edit(stepSK, "kout", nil), []string{"GetStep", "ListSteps"}, restore(stepSK, "kout")},
		{"first commit edited, its checksum removed", "d", both(edit(first, "d", b(flip10)), edit(first, "kd", nil)),
			[]string{"ListEvents", "ListEvents, newest first"}, restore(first, "d", "kd")},
		// Without the item's mark, the head's says the run has checksums.
		{"run output edited, its checksum and the body's mark removed", "out",
			both(edit("e~b", "out", b([]byte(`{"shipped":false}`))), edit("e~b", "kout", nil), edit("e~b", "cs", nil)),
			[]string{"GetRun"}, restore("e~b", "out", "kout", "cs")},
		{"commit's checksum and mark removed", "d", both(edit(commit, "d", b(edited)), edit(commit, "kd", nil), edit(commit, "cs", nil)),
			[]string{"ListEvents", "ListEvents, newest first"}, restore(commit, "d", "kd", "cs")},
		{"step result removed, its checksum left", "out", edit(stepSK, "out", nil), []string{"GetStep", "ListSteps"}, restore(stepSK, "out")},
	} {
		tc.do()
		for _, r := range tc.reads {
			err := reads[r]()
			f.wantCorrupt(tc.name, r, err)
			if err != nil && !strings.Contains(err.Error(), "attribute "+tc.attr+" ") {
				t.Errorf("%s: %s: %v, want the attribute %s named", tc.name, r, err, tc.attr)
			}
		}
		tc.undo()
		for _, r := range tc.reads {
			if err := reads[r](); err != nil {
				t.Fatalf("%s, restored: %s: %v", tc.name, r, err)
			}
		}
	}
}

// TestItemChecksumOldItems: items written before checksums (no checksum
// attribute, no mark on any item) still read, as they were written.
func TestItemChecksumOldItems(t *testing.T) {
	f := newSumFixture(t)
	for sk, it := range f.items() {
		for attr := range it {
			if attr == "cs" || len(attr) > 1 && attr[0] == 'k' && isCovered(attr[1:]) {
				f.setAV(sk, attr, nil)
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
	st, err := w.GetStep(context.Background(), &world.GetStepParams{RunID: f.run, StepID: f.step})
	if err != nil || string(st.Output) != `{"chargeId":"ch_1","cents":500}` {
		t.Fatalf("GetStep: %+v, %v", st, err)
	}
}

// isCovered reports whether an attribute carries a checksum (the World's
// list, as its items show it).
func isCovered(name string) bool {
	switch name {
	case "in", "out", "err", "cerr", "ctx", "attrs", "md", "d", "he", "wq":
		return true
	}
	return false
}

// TestResealAgrees: dynamotest.Reseal computes every item's checksums and
// mark as the World wrote them (the encrypt tests rely on it to reach the
// sealed layer), and every covered value the World wrote has a checksum.
func TestResealAgrees(t *testing.T) {
	f := newSumFixture(t)
	for sk, it := range f.items() {
		if _, ok := it["cs"]; !ok {
			t.Errorf("item %s has no checksum mark", sk)
		}
		c := maps.Clone(it)
		for attr := range c {
			if isCovered(attr) {
				if _, ok := it["k"+attr]; !ok {
					t.Errorf("item %s: %s has no checksum", sk, attr)
				}
				delete(c, "k"+attr)
			}
		}
		delete(c, "cs")
		dynamotest.Reseal(c)
		if !reflect.DeepEqual(c, it) {
			t.Errorf("item %s: Reseal gives %v, the World wrote %v", sk, c, it)
		}
	}
}
