package itemsum

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// head is a run head as the World encodes one, with its format flag b.
func head() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "r#run1"}, "sk": &types.AttributeValueMemberS{Value: "e~"},
		HeadFlag: &types.AttributeValueMemberN{Value: "1"},
		"st":     &types.AttributeValueMemberS{Value: "running"},
	}
}

// TestHeadFlagLevels: a head sealed now covers its format flag and must
// carry it; heads sealed at level 2 (before) carry it without a checksum,
// and that stays accepted.
func TestHeadFlagLevels(t *testing.T) {
	sealed := head()
	Seal(sealed)
	if !Marked(sealed) || !WriteMarked(sealed) {
		t.Fatalf("a sealed head is not marked: %v", sealed[Mark])
	}
	if f := Verify(sealed); f != nil {
		t.Fatalf("sealed head: %+v", f)
	}
	if f := MissingHeadFlag(sealed); f != nil {
		t.Fatalf("sealed head with its flag: %+v", f)
	}

	for name, edit := range map[string][]string{"the flag": {HeadFlag}, "the flag and its checksum": {HeadFlag, Attr(HeadFlag)}} {
		it := head()
		Seal(it)
		for _, a := range edit {
			delete(it, a)
		}
		if Verify(it) == nil && MissingHeadFlag(it) == nil {
			t.Errorf("%s removed from a level-3 head: no fault", name)
		}
	}

	old := head() // sealed at level 2: the flag without a checksum
	old[Mark] = &types.AttributeValueMemberN{Value: levelWrite}
	if f := Verify(old); f != nil {
		t.Errorf("a level-2 head's flag without its checksum: %+v", f)
	}
	if f := Unsummed(old); f != nil {
		t.Errorf("a level-2 head's flag in a run with checksums: %+v", f)
	}
	delete(old, HeadFlag)
	if f := MissingHeadFlag(old); f != nil {
		t.Errorf("a level-2 head without the flag (a run of the format before): %+v", f)
	}

	// Any other covered value must carry its checksum in a run with
	// checksums, whatever the item's own mark says.
	body := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "r#run1"}, "sk": &types.AttributeValueMemberS{Value: "e~b"},
		"out": &types.AttributeValueMemberB{Value: []byte("1")}}
	if f := Unsummed(body); f == nil || f.Attr != "out" {
		t.Errorf("an unmarked item's value without its checksum: %+v, want a fault of out", f)
	}
}
