package itemsum

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func hookItem(pk, sk, run, hid, tok string) map[string]types.AttributeValue {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	return map[string]types.AttributeValue{"pk": s(pk), "sk": s(sk), "run": s(run), "hid": s(hid), "tok": s(tok)}
}

// TestVerifyHookBindsKeyRunHookAndToken: HookSum fails when any of the
// item's key, run, hook ID or token differs from what it was sealed with,
// when the token is removed, and (required) when it is missing.
func TestVerifyHookBindsKeyRunHookAndToken(t *testing.T) {
	sealed := func() map[string]types.AttributeValue {
		it := hookItem("t#aa", "tok", "run1", "hook1", "secret")
		SealHook(it)
		return it
	}
	if f := VerifyHook(sealed(), true); f != nil {
		t.Fatalf("sealed item: %+v", f)
	}
	if f := VerifyHook(hookItem("t#aa", "tok", "run1", "hook1", "secret"), false); f != nil {
		t.Fatalf("item written before HookSum, not required: %+v", f)
	}
	if f := VerifyHook(hookItem("t#aa", "tok", "run1", "hook1", "secret"), true); f == nil {
		t.Fatal("item without HookSum where required: accepted")
	}
	for _, attr := range []string{"pk", "sk", "run", "hid", "tok"} {
		it := sealed()
		it[attr] = &types.AttributeValueMemberS{Value: "other"}
		if f := VerifyHook(it, false); f == nil || f.Attr != "tok" {
			t.Fatalf("%s edited: %+v, want a fault of tok", attr, f)
		}
	}
	it := sealed()
	delete(it, "tok")
	if f := VerifyHook(it, false); f == nil {
		t.Fatal("token removed, its checksum left: accepted")
	}
	it = sealed()
	it[HookSum] = &types.AttributeValueMemberB{Value: []byte{1}}
	if f := VerifyHook(it, false); f == nil {
		t.Fatal("malformed checksum: accepted")
	}
	plain := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "r#x"}}
	SealHook(plain)
	if _, ok := plain[HookSum]; ok || VerifyHook(plain, true) != nil {
		t.Fatal("an item without a token got or needs a hook checksum")
	}
}
