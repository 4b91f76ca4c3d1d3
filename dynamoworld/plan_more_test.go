package dynamoworld

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/skeinflow/skein/world"
)

// TestPlanCommitTooWide: a commit whose writes do not fit one transaction
// is refused as invalid; AppendFits tells the engine where to cut.
func TestPlanCommitTooWide(t *testing.T) {
	t.Parallel()
	var evs []world.EventInput
	for i := range maxTransactionItems {
		evs = append(evs, stepCreated(fmt.Sprintf("S%03d", i)))
	}
	in := &planInput{snap: started(t), runID: planRunID, events: evs, now: planT0, eventIDs: make([]string, len(evs)),
		opts: planOptions{lazySteps: true, cc: &claimCheck{prefix: "p/", threshold: DefaultClaimCheckThreshold}}}
	if _, err := planCommit(in); !errors.Is(err, world.ErrInvalid) {
		t.Fatalf("a commit of %d new steps: %v, want ErrInvalid", len(evs), err)
	}
}

// TestPlanCommitIsPure: planning twice on one snapshot gives the same
// writes and leaves the snapshot as it was.
func TestPlanCommitIsPure(t *testing.T) {
	t.Parallel()
	snap := planLog(t, map[string]int64{"A": 2}, runCreated, runStarted, stepCreated("A"), stepStarted("A"), hookCreated("H", "tk"), waitCreated("W"))
	before, _ := json.Marshal([]any{snap.run, snap.steps, snap.waits, snap.hooks, snap.lazy, snap.nHooks, snap.nWaits})
	evs := []world.EventInput{stepDone("A"), stepCreated("B"), stepStarted("B"), runDone}
	var got [][]string
	for range 2 {
		ends := &runEndItems{hooks: []*world.Hook{{HookID: hk("H"), Token: "tk"}}, waits: []string{wt("W")}}
		pd, err := planCommit(&planInput{snap: snap, runID: planRunID, events: evs, ends: ends, eventIDs: []string{pid(world.PrefixEvent, "M1"), pid(world.PrefixEvent, "M2"), pid(world.PrefixEvent, "M3"), pid(world.PrefixEvent, "M4")}, now: planT0,
			opts: planOptions{lazySteps: true, cc: &claimCheck{prefix: "p/", threshold: DefaultClaimCheckThreshold}}})
		if err != nil || pd.outcome != planWrite {
			t.Fatalf("planCommit: %v, %v", pd.outcome, err)
		}
		got = append(got, describeOps(pd.pl.ops, evs))
	}
	after, _ := json.Marshal([]any{snap.run, snap.steps, snap.waits, snap.hooks, snap.lazy, snap.nHooks, snap.nWaits})
	if !slices.Equal(got[0], got[1]) || string(before) != string(after) {
		t.Fatalf("two plans: %v and %v; snapshot before %s, after %s", got[0], got[1], before, after)
	}
}

// TestClassify: what each cancellation reason of a transaction means.
func TestClassify(t *testing.T) {
	t.Parallel()
	create, other := &plan{created: true}, &plan{}
	for _, tc := range []struct {
		name string
		pl   *plan
		ci   cancelInfo
		want verdict
	}{
		{"a validation error", other, cancelInfo{validation: "ValidationError: x", fence: true}, verdictInvalid},
		{"run_created: the head exists", create, cancelInfo{head: true}, verdictRunExists},
		{"run_created: the fence is taken", create, cancelInfo{fence: true}, verdictRunExists},
		{"run_created: the idempotency key is taken", create, cancelInfo{idem: true}, verdictIdemTaken},
		{"the fence: a stale snapshot", other, cancelInfo{fence: true}, verdictStale},
		{"an item assumed absent exists", other, cancelInfo{other: true}, verdictStale},
		{"a hook ID is taken", other, cancelInfo{global: true}, verdictStale},
		{"a token is taken", other, cancelInfo{tokens: map[string]item{"tk": {}}}, verdictTokens},
		{"a holder let go of its token", other, cancelInfo{holders: []string{"tk"}}, verdictTokens},
		{"a stale snapshot wins over tokens", other, cancelInfo{fence: true, tokens: map[string]item{"tk": {}}}, verdictStale},
		{"a transaction conflict", other, cancelInfo{conflict: true}, verdictTransient},
		{"throttled", other, cancelInfo{throttled: true}, verdictTransient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := classify(tc.pl, &tc.ci); got != tc.want {
				t.Fatalf("classify: %d, want %d", got, tc.want)
			}
		})
	}
}

// describeOps writes a transaction in the tests' notation: "<kind> <item>
// [if <condition>]", the item named by its sort key in the run's partition
// (commit@<prev> for a commit), hook:<id>, token:<token> or idem:<key> for
// the global items, and the condition with its names and values filled in.
func describeOps(ops []*op, evs []world.EventInput) []string {
	names := map[itemKey]string{idemKey("k1"): "idem:k1"}
	for _, in := range evs {
		if d, ok := in.Data.(*world.HookCreated); ok {
			names[tokenKey(d.Token)] = "token:" + d.Token
		}
	}
	for _, tok := range []string{"tk"} {
		names[tokenKey(tok)] = "token:" + tok
	}
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = idPattern.ReplaceAllString(describeOp(o, names), "$1")
	}
	return out
}

func describeOp(o *op, names map[itemKey]string) string {
	kind := map[opKind]string{opPut: "put", opUpdate: "update", opDelete: "delete", opCheck: "check"}[o.kind]
	k := o.key.sk
	switch {
	case names[o.key] != "":
		k = names[o.key]
	case o.key.sk == skHook:
		k = "hook:" + o.key.pk[2:]
	case strings.HasPrefix(o.key.sk, prefCommit):
		prev, _ := prevFromSK(o.key.sk)
		k = fmt.Sprintf("commit@%d", prev)
	}
	s := kind + " " + k
	if o.cond == nil {
		return s
	}
	e := newExpr()
	if o.kind == opUpdate {
		e = o.upd.e
	}
	cond := o.cond(e)
	var subs []string
	for p, n := range e.nameMap() {
		subs = append(subs, p, n)
	}
	for p, v := range e.valueMap() {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			subs = append(subs, p, v.Value)
		case *types.AttributeValueMemberN:
			subs = append(subs, p, v.Value)
		}
	}
	// Longest placeholders first, so that #n1 does not eat #n10.
	pairs := make([][2]string, 0, len(subs)/2)
	for i := 0; i < len(subs); i += 2 {
		pairs = append(pairs, [2]string{subs[i], subs[i+1]})
	}
	sort.Slice(pairs, func(i, j int) bool { return len(pairs[i][0]) > len(pairs[j][0]) })
	for _, p := range pairs {
		cond = strings.ReplaceAll(cond, p[0], p[1])
	}
	return s + " if " + cond
}

func maps2Equal(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A takeover of a lazy step (step_started on it, running, its lease judged
// expired) that the same commit also ends (step_completed or step_failed)
// must check the lease record as a takeover alone does: a bare end would
// write the commit item alone, and a renewal the committing World did not
// see would not stop it (the step would run twice). Found in review.
func TestTakeoverThatEndsALazyStepChecksItsLease(t *testing.T) {
	snap := planLog(t, map[string]int64{"A": 2}, runCreated, runStarted, stepCreated("A"), stepStarted("A"))
	for _, end := range []world.EventInput{stepDone("A"), ein(st("A"), &world.StepFailed{Error: &world.ErrorData{Message: "x"}})} {
		evs := []world.EventInput{stepStarted("A"), end}
		in := &planInput{
			snap: snap, runID: planRunID, events: evs, now: planT0.Add(time.Hour),
			opts: planOptions{lazySteps: true, cc: &claimCheck{prefix: "p/", threshold: DefaultClaimCheckThreshold}},
		}
		for i := range evs {
			in.eventIDs = append(in.eventIDs, pid(world.PrefixEvent, fmt.Sprintf("M%d", i+1)))
		}
		pd, err := planCommit(in)
		if err != nil || pd.outcome != planWrite {
			t.Fatalf("planCommit: %v, %v", pd.outcome, err)
		}
		got := describeOps(pd.pl.ops, evs)
		guarded := false
		for _, w := range got {
			if strings.Contains(w, "x#A") {
				guarded = true
			}
		}
		if !guarded {
			t.Errorf("takeover + %s of a lazy step: writes %v: no check of the lease record (a renewal not seen is ignored)", end.Type(), got)
		}
	}
}
