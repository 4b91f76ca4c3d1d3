package dynamoworld_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
)

// TestCommitRunStatusAgreesWithHead: trial21 edited the newest commit's
// run status (rs) by hand: `completed` on a live run made GetRun answer
// completed while the head said running, with no error, and rs removed
// gave an untyped error. A commit and its run's head are written in one
// transaction: a terminal status on either without the other (or two
// different terminal ones), read twice, is world.ErrCorrupt naming both,
// and a missing or unknown rs is world.ErrCorrupt.
func TestCommitRunStatusAgreesWithHead(t *testing.T) {
	s := func(v string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: v} }
	newest := fmt.Sprintf("e#%020d", 4)
	for _, tc := range []struct {
		name, sk, update string
		values           map[string]types.AttributeValue
		completed        bool // on a completed run, not a live one
		want             string
	}{
		{name: "live run's newest commit says completed", sk: newest, update: "SET rs = :s", values: map[string]types.AttributeValue{":s": s("completed")}, want: "says the run is completed"},
		{name: "live run's newest commit says cancelled", sk: newest, update: "SET rs = :s", values: map[string]types.AttributeValue{":s": s("cancelled")}, want: "says the run is cancelled"},
		{name: "completed run's newest commit says running", sk: "", update: "SET rs = :s", values: map[string]types.AttributeValue{":s": s("running")}, completed: true, want: "are missing"},
		{name: "completed run's newest commit says failed", sk: "", update: "SET rs = :s", values: map[string]types.AttributeValue{":s": s("failed")}, completed: true, want: "says the run is failed"},
		{name: "completed run's head says running", sk: "e~", update: "SET st = :s", values: map[string]types.AttributeValue{":s": s("running")}, completed: true, want: "its head e~ says running"},
		{name: "rs removed", sk: newest, update: "REMOVE rs", want: "no valid run status"},
		{name: "rs unknown", sk: newest, update: "SET rs = :s", values: map[string]types.AttributeValue{":s": s("done")}, want: "no valid run status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGapsFixture(t)
			ctx := context.Background()
			var run string
			if tc.completed {
				run = completedRun(t, f.open(t))
				if tc.sk == "" {
					tc.sk = fmt.Sprintf("e#%020d", 5)
				}
			} else {
				run, _, _ = liveRunWithNewestCommit(t, f.open(t))
			}
			f.editItem(t, run, tc.sk, tc.update, tc.values)
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, world.ErrCorrupt) || !strings.Contains(err.Error(), run) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%s: got %v, want world.ErrCorrupt naming run %s and %q", what, err, run, tc.want)
				}
			}
			r, err := f.open(t).GetRun(ctx, &world.GetRunParams{RunID: run})
			if err == nil {
				t.Fatalf("GetRun: %s, no error", r.Status)
			}
			check("GetRun", err)
			if !strings.Contains(tc.want, "valid") {
				// The log's events are whole; its end disagrees with the head.
				_, err = runrules.AllEvents(ctx, f.open(t), run)
				check("the whole log", err)
			}
			before := f.commitKeys(t, run)
			_, err = f.open(t).Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{Data: &world.RunCancelled{Reason: "ops"}}}})
			check("Append", err)
			if after := f.commitKeys(t, run); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("the run's commits changed: %v, were %v", after, before)
			}
		})
	}
}
