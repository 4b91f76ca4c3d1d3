package dynamoworld

import (
	"time"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
)

// jsonOf returns a JSON string value of about n bytes.
func jsonOf(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`)
}

func TestOffloadPlan(t *testing.T) {
	cc := &claimCheck{prefix: "p/", threshold: 64 << 10}
	enc := func(sizes ...int) *encItem {
		e := newEncItem(itemKey{"pk", "sk"})
		for i, n := range sizes {
			e.payload([]string{attrInput, attrOutput, attrError, attrContext}[i], bytes.Repeat([]byte("a"), n))
		}
		return e
	}
	t.Run("over the threshold", func(t *testing.T) {
		plan, err := cc.offloadPlan([]*encItem{enc(64<<10, 64<<10+1)}, 0)
		if err != nil || plan[0][attrInput] || !plan[0][attrOutput] {
			t.Fatalf("plan %v, %v: want only the payload over 64 KiB offloaded", plan, err)
		}
	})
	t.Run("item over the limit", func(t *testing.T) {
		big := &claimCheck{prefix: "p/", threshold: 100 << 10}
		e := enc(90<<10, 95<<10, 90<<10, 90<<10) // 365 KiB, each under the threshold
		plan, err := big.offloadPlan([]*encItem{e}, 0)
		if err != nil || len(plan[0]) != 1 || !plan[0][attrOutput] {
			t.Fatalf("plan %v, %v: want the largest payload offloaded", plan, err)
		}
	})
	t.Run("transaction over the limit", func(t *testing.T) {
		var encs []*encItem
		for range 60 {
			encs = append(encs, enc(60<<10)) // 3.6 MiB in all
		}
		plan, err := cc.offloadPlan(encs, maxTransactionBytes)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for i, e := range encs {
			total += itemSize(e.it)
			if plan[i][attrInput] {
				total -= 60<<10 - 80
			}
		}
		if total > maxTransactionBytes {
			t.Fatalf("after the plan the items hold %d bytes, over %d", total, maxTransactionBytes)
		}
	})
	t.Run("no payload to move", func(t *testing.T) {
		e := newEncItem(itemKey{"pk", "sk"})
		e.it["wf"] = str(strings.Repeat("w", 360<<10))
		if _, err := cc.offloadPlan([]*encItem{e}, 0); err == nil || world.Status(err) != 400 {
			t.Fatalf("an item too large without payloads: %v, want ErrInvalid", err)
		}
	})
}

// TestClaimCheckRoundTrip appends large payloads through a fake DynamoDB,
// checks what reaches it, then reads them back through the same items.
func TestClaimCheckRoundTrip(t *testing.T) {
	ddb := &fakeDDB{}
	s3c := newFakeS3()
	w := newFakeWorld(t, ddb, s3c, nil)
	id := testIDs.New(world.PrefixRun)
	input := jsonOf(300 << 10)  // over the threshold and over a third of an item
	ctxData := jsonOf(60 << 10) // under the threshold
	// Attributes are bounded (world.MaxAttributes of at most
	// world.MaxAttributeValueLength bytes): never claim-checked.
	attrs := map[string]string{"k": strings.Repeat("v", world.MaxAttributeValueLength)}
	_, err := appendEvents(w, id, ev("", &world.RunCreated{WorkflowName: "wf", Input: input, ExecutionContext: ctxData, Attributes: attrs}))
	if err != nil {
		t.Fatal(err)
	}
	in := ddb.writes[0]
	stored := map[itemKey]item{}
	for _, ti := range in.TransactItems {
		it := ti.Put.Item
		if n := itemSize(it); n >= 400_000 {
			t.Fatalf("item %s is %d bytes: over DynamoDB's 400 KB", keyOf(it), n)
		}
		stored[itemKey{getS(it, attrPK), getS(it, attrSK)}] = it
	}
	body := stored[runBodyKey(id)]
	if _, ok := body[attrInput].(*types.AttributeValueMemberS); !ok {
		t.Fatalf("a 300 KB input is stored inline")
	}
	if _, ok := body[attrContext].(*types.AttributeValueMemberB); !ok {
		t.Fatalf("a 60 KB execution context is not stored inline")
	}
	if _, ok := body[attrAttrs].(*types.AttributeValueMemberB); !ok {
		t.Fatalf("the attributes are not stored inline")
	}
	if it := stored[attrItemKey(id, "k")]; getS(it, attrG4) != attrIndexKey("k", attrs["k"]) {
		t.Fatalf("the attribute's index item is %v", it)
	}
	if c := stored[commitKey(id, 0)]; itemSize(c) > 4096 || !strings.Contains(string(c[attrData].(*types.AttributeValueMemberB).Value), `"r":"skein/blobs/`) {
		t.Fatalf("the run_created event with a 300 KB input is stored inline")
	}
	for k := range s3c.objects {
		if !strings.HasPrefix(k, "skein/blobs/"+id+"/") {
			t.Fatalf("claim-checked payload at %q, outside the run's prefix", k)
		}
	}
	if s3c.puts != 2 {
		t.Fatalf("%d payloads uploaded, want 2 (input, event)", s3c.puts)
	}
	// Read back: GetRun and ListEvents resolve the references.
	serveItems(ddb, stored)
	r, err := w.GetRun(context.Background(), &world.GetRunParams{RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Input, input) || !bytes.Equal(r.ExecutionContext, ctxData) || r.Attributes["k"] != attrs["k"] {
		t.Fatalf("GetRun did not resolve the claim-checked payloads")
	}
	evs, err := w.ListEvents(context.Background(), &world.ListEventsParams{RunID: id})
	if err != nil || len(evs.Items) != 1 || !bytes.Equal(evs.Items[0].Data.(*world.RunCreated).Input, input) {
		t.Fatalf("ListEvents did not resolve the event's payload: %v", err)
	}
}

// TestClaimCheckRetryUploadsOnce: a commit retried after a conflict stores
// its payloads once (content-addressed keys, remembered uploads).
func TestClaimCheckRetryUploadsOnce(t *testing.T) {
	ddb := &fakeDDB{}
	s3c := newFakeS3()
	w := newFakeWorld(t, ddb, s3c, nil)
	id := startRun(t, w)
	ddb.twrite = func(n int, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		if n == 2 {
			return nil, cancel(len(in.TransactItems), map[int]string{0: "TransactionConflict"}, nil)
		}
		return &dynamodb.TransactWriteItemsOutput{}, nil
	}
	step := testIDs.New(world.PrefixStep)
	if _, err := appendEvents(w, id, ev(step, &world.StepCreated{StepName: "s", Input: jsonOf(100 << 10)})); err != nil {
		t.Fatal(err)
	}
	if len(ddb.writes) != 3 || s3c.puts != 2 {
		t.Fatalf("%d transactions and %d uploads; want 3 (create, conflict, commit) and 2 (step input, event)", len(ddb.writes), s3c.puts)
	}
}

// TestLargeCommitStaysUnderTheTransactionLimit: 40 steps with 90 KB inputs
// each (under a 100 KiB threshold) would make a 7 MB transaction.
func TestLargeCommitStaysUnderTheTransactionLimit(t *testing.T) {
	ddb := &fakeDDB{}
	w := newFakeWorld(t, ddb, newFakeS3(), func(c *Config) { c.ClaimCheckThreshold = 100 << 10 })
	id := startRun(t, w)
	var evs []world.EventInput
	for i := range 40 {
		evs = append(evs, ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: fmt.Sprint("s", i), Input: jsonOf(90 << 10)}))
	}
	if _, err := appendEvents(w, id, evs...); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, ti := range ddb.writes[1].TransactItems {
		if ti.Put != nil {
			total += itemSize(ti.Put.Item)
		}
	}
	if total > maxTransactionBytes {
		t.Fatalf("the transaction carries %d bytes, over %d", total, maxTransactionBytes)
	}
}

func TestCommitTooLargeIsInvalid(t *testing.T) {
	ddb := &fakeDDB{}
	w := newFakeWorld(t, ddb, newFakeS3(), nil)
	id := startRun(t, w)
	var evs []world.EventInput
	for range 100 { // one commit item and 100 steps: over 100 items
		evs = append(evs, ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: "s"}))
	}
	_, err := appendEvents(w, id, evs...)
	if world.Status(err) != 400 || !strings.Contains(err.Error(), "100 in one transaction") {
		t.Fatalf("a commit of 101 items: %v, want ErrInvalid explaining the limit", err)
	}
}

// TestClaimCheckVerifiesDigest: a claim-checked object changed in S3 (one
// byte, or replaced by other bytes) reads as world.ErrCorrupt naming the
// object, never as data, through the run and its events alike.
func TestClaimCheckVerifiesDigest(t *testing.T) {
	ddb := &fakeDDB{}
	s3c := newFakeS3()
	w := newFakeWorld(t, ddb, s3c, nil)
	id := testIDs.New(world.PrefixRun)
	if _, err := appendEvents(w, id, ev("", &world.RunCreated{WorkflowName: "wf", Input: jsonOf(300 << 10)})); err != nil {
		t.Fatal(err)
	}
	stored := map[itemKey]item{}
	for _, ti := range ddb.writes[0].TransactItems {
		stored[itemKey{getS(ti.Put.Item, attrPK), getS(ti.Put.Item, attrSK)}] = ti.Put.Item
	}
	serveItems(ddb, stored)
	orig := map[string][]byte{}
	for k, b := range s3c.objects {
		orig[k] = b
	}
	for _, tc := range []struct {
		name   string
		tamper func([]byte) []byte
	}{
		{"one byte changed", func(b []byte) []byte { c := bytes.Clone(b); c[len(c)/2] = 'y'; return c }},
		{"other bytes", func([]byte) []byte { return []byte(`"attacker"`) }},
		{"empty", func([]byte) []byte { return nil }},
	} {
		for k, b := range orig {
			s3c.objects[k] = tc.tamper(b)
		}
		fresh := newFakeWorld(t, ddb, s3c, nil) // nothing cached
		_, err := fresh.GetRun(context.Background(), &world.GetRunParams{RunID: id})
		if !errors.Is(err, world.ErrCorrupt) || !strings.Contains(err.Error(), "s3://skein-test/skein/blobs/"+id+"/") || !strings.Contains(err.Error(), "input of item") {
			t.Errorf("%s: GetRun: %v, want world.ErrCorrupt naming the object and the input", tc.name, err)
		}
		_, err = fresh.ListEvents(context.Background(), &world.ListEventsParams{RunID: id})
		if !errors.Is(err, world.ErrCorrupt) {
			t.Errorf("%s: ListEvents: %v, want world.ErrCorrupt", tc.name, err)
		}
	}
}

// TestClaimCheckedObjectMissing: a claim-checked object deleted from S3 on
// a table without Retention read as "ErrGone ... has expired", though
// nothing there expires. It is now world.ErrCorrupt saying the object is
// missing; with Retention, a lifecycle rule may have expired it: ErrGone.
func TestClaimCheckedObjectMissing(t *testing.T) {
	for _, retention := range []time.Duration{0, time.Hour} {
		ddb := &fakeDDB{}
		s3c := newFakeS3()
		mod := func(c *Config) { c.Retention = retention }
		w := newFakeWorld(t, ddb, s3c, mod)
		id := testIDs.New(world.PrefixRun)
		if _, err := appendEvents(w, id, ev("", &world.RunCreated{WorkflowName: "wf", Input: jsonOf(300 << 10)})); err != nil {
			t.Fatal(err)
		}
		stored := map[itemKey]item{}
		for _, ti := range ddb.writes[0].TransactItems {
			stored[itemKey{getS(ti.Put.Item, attrPK), getS(ti.Put.Item, attrSK)}] = ti.Put.Item
		}
		serveItems(ddb, stored)
		clear(s3c.objects)
		_, err := newFakeWorld(t, ddb, s3c, mod).GetRun(context.Background(), &world.GetRunParams{RunID: id})
		switch {
		case retention == 0 && (!errors.Is(err, world.ErrCorrupt) || !strings.Contains(err.Error(), "is missing") || strings.Contains(err.Error(), "expired")):
			t.Errorf("no retention: GetRun: %v, want world.ErrCorrupt saying the object is missing", err)
		case retention > 0 && !errors.Is(err, world.ErrGone):
			t.Errorf("retention %v: GetRun: %v, want world.ErrGone", retention, err)
		}
	}
}
