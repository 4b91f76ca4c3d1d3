package world_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/skeinflow/skein/world"
)

const attrID = "attr_01ARZ3NDEKTSV4RRFFQ69G5FAV"

func withAttrs(r *world.Run, attrs map[string]string) *world.Run { r.Attributes = attrs; return r }

// fullAttrs returns MaxAttributes attributes k00, k01, ...
func fullAttrs() map[string]string {
	m := map[string]string{}
	for i := range world.MaxAttributes {
		m[fmt.Sprintf("k%02d", i)] = "v"
	}
	return m
}

func wantAttrs(want map[string]string) func(t *testing.T, eff world.Effect, _ error) {
	return func(t *testing.T, eff world.Effect, _ error) {
		if !reflect.DeepEqual(eff.Run.Attributes, want) {
			t.Fatalf("attributes %v, want %v", eff.Run.Attributes, want)
		}
		if eff.EndsRun || eff.Step != nil || eff.Hook != nil || eff.Wait != nil {
			t.Fatalf("attribute_set changed more than the run: %+v", eff)
		}
	}
}

// wantRefusalNaming checks that the refusal is a *RefusalError whose reason
// names what.
func wantRefusalNaming(what string) func(t *testing.T, _ world.Effect, err error) {
	return func(t *testing.T, _ world.Effect, err error) {
		var re *world.RefusalError
		if !errors.As(err, &re) || !strings.Contains(re.Reason, what) {
			t.Fatalf("got %v, want a *RefusalError naming %s", err, what)
		}
	}
}

func TestApplyAttributeSet(t *testing.T) {
	t.Parallel()
	set := func(kv ...string) *world.AttributeSet {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return &world.AttributeSet{Attributes: m}
	}
	running := world.State{Run: withAttrs(mkRun(world.RunStatusRunning), map[string]string{"a": "1", "b": "2"})}
	cases := []applyCase{
		{name: "sets on a run without attributes", state: world.State{Run: mkRun(world.RunStatusPending)}, data: set("a", "1"),
			check: wantAttrs(map[string]string{"a": "1"})},
		{name: "merges and overwrites", state: running, data: set("b", "3", "c", "4"),
			check: wantAttrs(map[string]string{"a": "1", "b": "3", "c": "4"})},
		{name: "from workflow code, with its correlation ID", state: running, corr: attrID, data: set("c", "x"),
			check: wantAttrs(map[string]string{"a": "1", "b": "2", "c": "x"})},
		{name: "on a held run", state: world.State{Run: mkRun(world.RunStatusHeld)}, data: set("a", "1"), check: wantAttrs(map[string]string{"a": "1"})},
		{name: "fills the run to the bound", state: world.State{Run: withAttrs(mkRun(world.RunStatusRunning), func() map[string]string {
			m := fullAttrs()
			delete(m, "k00")
			return m
		}())}, data: set("k00", "v"), check: wantAttrs(fullAttrs())},
		{name: "overwrites on a full run", state: world.State{Run: withAttrs(mkRun(world.RunStatusRunning), fullAttrs())}, data: set("k03", "v"),
			check: wantAttrs(fullAttrs())},
		{name: "one past the bound", state: world.State{Run: withAttrs(mkRun(world.RunStatusRunning), fullAttrs())}, data: set("zz", "v"),
			want: world.ErrInvalid, check: wantRefusalNaming(`"zz"`)},
		{name: "no run", data: set("a", "1"), want: world.ErrNotFound},
		{name: "no attributes", state: running, data: &world.AttributeSet{}, want: world.ErrInvalid},
		{name: "a key with a space", state: running, data: set("bad key", "1"), want: world.ErrInvalid, check: wantRefusalNaming(`"bad key"`)},
		{name: "a key with a slash", state: running, data: set("a/b", "1"), want: world.ErrInvalid, check: wantRefusalNaming(`"a/b"`)},
		{name: "a key too long", state: running, data: set(strings.Repeat("k", world.MaxAttributeKeyLength+1), "1"), want: world.ErrInvalid},
		{name: "an empty key", state: running, data: set("", "1"), want: world.ErrInvalid},
		{name: "an empty value", state: running, data: set("a", ""), want: world.ErrInvalid, check: wantRefusalNaming(`"a"`)},
		{name: "a value too long", state: running, data: set("a", strings.Repeat("v", world.MaxAttributeValueLength+1)), want: world.ErrInvalid},
		{name: "a value with a control character", state: running, data: set("a", "x\ny"), want: world.ErrInvalid},
		{name: "a value not UTF-8", state: running, data: set("a", "\xff"), want: world.ErrInvalid},
		{name: "a step's correlation ID", state: running, corr: stepID, data: set("a", "1"), want: world.ErrInvalid},
		{name: "invalid patch", state: running, corr: attrID, data: &world.AttributeSet{Attributes: map[string]string{"a": "1"}, Patches: []string{""}}, want: world.ErrInvalid},
	}
	for _, st := range terminalRuns {
		cases = append(cases, applyCase{name: "after the run ended " + string(st), state: world.State{Run: mkRun(st)}, data: set("a", "1"),
			check: wantAttrs(map[string]string{"a": "1"})})
	}
	runApplyCases(t, cases)
}

func TestApplyRunCreatedAttributes(t *testing.T) {
	t.Parallel()
	tooMany := fullAttrs()
	tooMany["zz"] = "v"
	runApplyCases(t, []applyCase{
		{name: "at the bound", data: &world.RunCreated{WorkflowName: "wf", Attributes: fullAttrs()}, check: wantAttrs(fullAttrs())},
		{name: "too many", data: &world.RunCreated{WorkflowName: "wf", Attributes: tooMany}, want: world.ErrInvalid},
		{name: "invalid key", data: &world.RunCreated{WorkflowName: "wf", Attributes: map[string]string{"a b": "1"}}, want: world.ErrInvalid,
			check: wantRefusalNaming(`"a b"`)},
		{name: "empty value", data: &world.RunCreated{WorkflowName: "wf", Attributes: map[string]string{"a": ""}}, want: world.ErrInvalid},
	})
}

func TestCheckAttributeKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{"a", true}, {"Tenant_ID.v2:x-y", true}, {strings.Repeat("k", world.MaxAttributeKeyLength), true},
		{"", false}, {strings.Repeat("k", world.MaxAttributeKeyLength+1), false}, {"a=b", false}, {"a#b", false},
		{"é", false}, {"a b", false}, {"a\x00", false},
	} {
		t.Run(tc.key, func(t *testing.T) {
			t.Parallel()
			if err := world.CheckAttributes(map[string]string{tc.key: "v"}); (err == nil) != tc.ok {
				t.Fatalf("CheckAttributes({%q: v}) = %v, want ok=%v", tc.key, err, tc.ok)
			}
		})
	}
}

func TestAttributeFilter(t *testing.T) {
	t.Parallel()
	r := &world.Run{Attributes: map[string]string{"a": "1"}}
	for _, tc := range []struct {
		name  string
		f     *world.AttributeFilter
		match bool
		valid bool
	}{
		{"nil matches", nil, true, true},
		{"same value", &world.AttributeFilter{Key: "a", Value: "1"}, true, true},
		{"other value", &world.AttributeFilter{Key: "a", Value: "2"}, false, true},
		{"other key", &world.AttributeFilter{Key: "b", Value: "1"}, false, true},
		{"invalid key", &world.AttributeFilter{Key: "a b", Value: "1"}, false, false},
		{"empty value", &world.AttributeFilter{Key: "a"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.f.Matches(r); got != tc.match {
				t.Fatalf("Matches = %v", got)
			}
			if tc.f != nil {
				if err := tc.f.Check(); (err == nil) != tc.valid || (err != nil && !errors.Is(err, world.ErrInvalid)) {
					t.Fatalf("Check = %v, want valid=%v", err, tc.valid)
				}
			}
		})
	}
}
