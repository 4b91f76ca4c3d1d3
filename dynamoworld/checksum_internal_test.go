package dynamoworld

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/internal/itemsum"
	"github.com/skeinflow/skein/world"
)

// applyUpdate does to stored what DynamoDB does with u's SET and REMOVE
// clauses.
func applyUpdate(t *testing.T, stored item, u *updateBuilder) {
	t.Helper()
	for _, s := range u.sets {
		name, val, ok := strings.Cut(s, " = ")
		if !ok {
			t.Fatalf("SET clause %q", s)
		}
		stored[u.e.names[name]] = u.e.values[val]
	}
	for _, r := range u.remove {
		delete(stored, u.e.names[r])
	}
}

// TestDiffWritesValueAndChecksumTogether: an item written by several
// writers, each diffing the item from its own (possibly stale) view of it,
// verifies after every write. This is what broke the whole-item checksum:
// a writer's diff left a checksum computed over values it did not write
// (a payload another writer had claim-checked, a hold another writer had
// set). Randomised: views and finals drawn from a few values of each
// attribute, stored, claim-checked or absent.
func TestDiffWritesValueAndChecksumTogether(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	key := runBodyKey("wrun_1")
	values := []types.AttributeValue{nil, &types.AttributeValueMemberB{Value: []byte(`{"a":1}`)},
		&types.AttributeValueMemberB{Value: []byte(`{"a":2}`)}, str("skein/blobs/wrun_1/00ff")}
	draw := func() item {
		it := key.av()
		for _, name := range []string{attrInput, attrOutput, attrAttrs, attrError, aHoldError} {
			if v := values[rng.IntN(len(values))]; v != nil {
				if name == aHoldError {
					v = str(fmt.Sprint(rng.IntN(3)))
				}
				it[name] = v
			}
		}
		setN(it, aStatus, int64(rng.IntN(3)))
		seal(it)
		return it
	}
	for round := range 2000 {
		stored := draw()
		for w := range 4 {
			base, final := draw(), draw()
			applyUpdate(t, stored, diffUpdate(base, final))
			if f := itemsum.Verify(stored); f != nil {
				t.Fatalf("round %d, writer %d: the stored item does not verify: %s %s\nbase   %s\nfinal  %s\nstored %s", round, w, f.Attr, f.What, show(base), show(final), show(stored))
			}
		}
	}
}

// TestVerifyNamesTheValue: a read's ErrCorrupt names the table, the run,
// the item and the attribute; a value moved to another item with its
// checksum, or to another attribute, does not verify.
func TestVerifyNamesTheValue(t *testing.T) {
	e := newEncItem(stepKey("wrun_1", "step_1"))
	e.payload(attrInput, []byte(`{"x":1}`))
	e.payload(attrOutput, []byte(`{"y":2}`))
	setN(e.it, aWrittenAt, 3)
	seal(e.it)
	w := &store{cfg: &Config{Table: "tab"}}
	if err := w.verified(e.it); err != nil {
		t.Fatal(err)
	}
	moved := maps.Clone(e.it)
	moved[attrOutput], moved[itemsum.Attr(attrOutput)] = e.it[attrInput], e.it[itemsum.Attr(attrInput)]
	err := w.verified(moved)
	if !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("a value moved to another attribute: %v", err)
	}
	for _, want := range []string{"table tab", "run wrun_1", "s#step_1", "attribute out (output)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not name %q", err, want)
		}
	}
	other := maps.Clone(e.it)
	other[attrSK] = str(prefStep + "step_2")
	if err := w.verified(other); !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("values moved to another item: %v", err)
	}
	if _, err := payloadOf(moved, attrOutput, nil); !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("payloadOf of a moved value: %v", err)
	}
}

// show prints an item's attributes and values.
func show(it item) string {
	var parts []string
	for _, k := range sortedKeys(it) {
		switch v := it[k].(type) {
		case *types.AttributeValueMemberB:
			parts = append(parts, fmt.Sprintf("%s=B%x", k, v.Value))
		case *types.AttributeValueMemberS:
			parts = append(parts, fmt.Sprintf("%s=S%q", k, v.Value))
		case *types.AttributeValueMemberN:
			parts = append(parts, fmt.Sprintf("%s=N%s", k, v.Value))
		}
	}
	return strings.Join(parts, " ")
}

// TestWriteMarkLevels: the write mark wq is under the checksum on an item
// written so (mark cs = 2): lowered, or removed with or without its
// checksum, it is world.ErrCorrupt naming it. An item written before it was
// covered (cs = 1, wq without kwq) still reads, as does one of another
// kind without wq (a commit).
func TestWriteMarkLevels(t *testing.T) {
	w := &store{cfg: &Config{Table: "tab"}}
	step := func() item {
		e := newEncItem(stepKey("wrun_1", "step_1"))
		e.payload(attrInput, []byte(`{"x":1}`))
		setN(e.it, aWrittenAt, 7)
		seal(e.it)
		return e.it
	}
	if err := w.verified(step()); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(it item){
		"lowered":                   func(it item) { setN(it, aWrittenAt, 4) },
		"removed":                   func(it item) { delete(it, aWrittenAt) },
		"removed with its checksum": func(it item) { delete(it, aWrittenAt); delete(it, itemsum.Attr(aWrittenAt)) },
		"checksum removed":          func(it item) { delete(it, itemsum.Attr(aWrittenAt)) },
	} {
		it := step()
		edit(it)
		err := w.verified(it)
		if !errors.Is(err, world.ErrCorrupt) || !strings.Contains(err.Error(), "attribute wq (write mark)") {
			t.Errorf("%s: %v, want world.ErrCorrupt naming wq", name, err)
		}
	}
	old := step()
	delete(old, itemsum.Attr(aWrittenAt))
	setN(old, itemsum.Mark, 1)
	if err := w.verified(old); err != nil {
		t.Errorf("an item written before wq was covered: %v", err)
	}
	if err := w.requireSums(true, "wrun_1", old); err != nil {
		t.Errorf("an item written before wq was covered, in a run with checksums: %v", err)
	}
	setN(old, aWrittenAt, 4)
	if err := w.verified(old); err != nil {
		t.Errorf("an item written before wq was covered, its wq edited (not caught): %v", err)
	}
	commit := newEncItem(commitKey("wrun_1", 0))
	seal(commit.it)
	if err := w.verified(commit.it); err != nil {
		t.Errorf("a commit item (no wq): %v", err)
	}
}
