package dynamoworld_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
)

// TestEntityMarkEditedIsCorrupt: trial21 removed the mark cs (or set it to
// another value) on the step item of a deleted commit, with its write mark
// wq lowered and its checksum removed: the check of wq is by the item's
// own mark, so the next commit was written at the deleted numbers. In a
// run whose head carries the current mark, every step, wait and hook-link
// item a load reads must carry it and wq under its checksum:
// world.ErrCorrupt naming the item and wq, nothing written. (A run's end,
// which reads the entities' marks without the head, is not covered yet.)
func TestEntityMarkEditedIsCorrupt(t *testing.T) {
	n := func(v int64) *types.AttributeValueMemberN {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	for _, tc := range []struct {
		name, update string
		values       map[string]types.AttributeValue
	}{
		{"cs removed", "SET wq = :q REMOVE cs, kwq", map[string]types.AttributeValue{":q": n(4)}},
		{"cs 1", "SET wq = :q, cs = :c REMOVE kwq", map[string]types.AttributeValue{":q": n(4), ":c": n(1)}},
		{"cs 3", "SET wq = :q, cs = :c REMOVE kwq", map[string]types.AttributeValue{":q": n(4), ":c": n(3)}},
		{"cs 0, wq removed", "SET cs = :c REMOVE wq, kwq", map[string]types.AttributeValue{":c": n(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGapsFixture(t)
			ctx := context.Background()
			run, s1, _ := liveRunWithNewestCommit(t, f.open(t))
			f.deleteCommit(t, run, 4) // events 5-7
			f.editStep(t, run, s1, tc.update, tc.values)
			before := f.commitKeys(t, run)
			_, err := f.open(t).Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: s1, Data: &world.StepCompleted{Result: []byte(`3`)}}}})
			wantGap(t, "an Append naming the step", err, f.cfg.Table, run, "wq")
			if after := f.commitKeys(t, run); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("the run's commits changed: %v, were %v", after, before)
			}
		})
	}
}
