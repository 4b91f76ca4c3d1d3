package dynamoworld_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/world"
)

// serialRun writes a run of n serial steps through one World (each
// completed bare by the next commit, the last one running) and returns
// the run and its steps.
func serialRun(t *testing.T, w world.World, n int) (string, []string) {
	t.Helper()
	run := startedRun(t, w)
	var steps []string
	prev := ""
	for range n {
		next := ids.New(world.PrefixStep)
		var evs []world.EventInput
		if prev != "" {
			evs = append(evs, world.EventInput{CorrelationID: prev, Data: &world.StepCompleted{Result: []byte(`1`)}})
		}
		evs = append(evs, world.EventInput{CorrelationID: next, Data: &world.StepCreated{StepName: "s", Input: []byte(`1`)}},
			world.EventInput{CorrelationID: next, Data: &world.StepStarted{LeaseTTL: time.Hour}})
		mustAppend(t, w, run, evs...)
		steps = append(steps, next)
		prev = next
	}
	return run, steps
}

// Tampering with a run of bare steps (found by an attacker's trial): each
// edit is world.ErrCorrupt on the reads that would otherwise return wrong
// data without an error.
func TestBareStepsTampered(t *testing.T) {
	ctx := context.Background()
	t.Run("a forged step item without marks", func(t *testing.T) {
		f := newGapsFixture(t)
		run, steps := serialRun(t, f.open(t), 4)
		now := strconv.FormatInt(time.Now().UnixNano(), 10)
		_, err := f.c.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.cfg.Table), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "r#" + run}, "sk": &types.AttributeValueMemberS{Value: "s#" + steps[0]},
			"sn": &types.AttributeValueMemberS{Value: "s"}, "st": &types.AttributeValueMemberS{Value: "running"},
			"at": &types.AttributeValueMemberN{Value: "1"}, "ca": &types.AttributeValueMemberN{Value: now},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if st, err := f.open(t).GetStep(ctx, &world.GetStepParams{RunID: run, StepID: steps[0]}); !errors.Is(err, world.ErrCorrupt) {
			t.Errorf("GetStep of the forged item: %+v, %v; want world.ErrCorrupt", st, err)
		}
		if p, err := f.open(t).ListSteps(ctx, &world.ListStepsParams{RunID: run}); !errors.Is(err, world.ErrCorrupt) {
			t.Errorf("ListSteps with the forged item: %+v, %v; want world.ErrCorrupt", p, err)
		}
	})
	t.Run("bd removed, listed by pages", func(t *testing.T) {
		f := newGapsFixture(t)
		run, _ := serialRun(t, f.open(t), 5)
		keys := f.commitKeys(t, run)
		f.editItem(t, run, keys[2], "REMOVE bd", nil) // the commit that left the first step bare
		w := f.open(t)
		var err error
		for cursor, pages := "", 0; pages < 10; pages++ {
			var p *world.Page[world.Step]
			if p, err = w.ListSteps(ctx, &world.ListStepsParams{RunID: run, Pagination: world.Pagination{Limit: 2, Cursor: cursor}}); err != nil || !p.HasMore {
				break
			}
			cursor = p.Cursor
		}
		if !errors.Is(err, world.ErrCorrupt) {
			t.Errorf("ListSteps by pages of a log whose bd was removed: %v, want world.ErrCorrupt", err)
		}
	})
	t.Run("a step item with no events", func(t *testing.T) {
		f := newGapsFixture(t)
		w := f.open(t)
		run, steps := serialRun(t, w, 3)
		other, _ := serialRun(t, w, 2)
		// A real, marked item of another run's step, copied under this run.
		pending := ids.New(world.PrefixStep)
		mustAppend(t, w, other, world.EventInput{CorrelationID: pending, Data: &world.StepCreated{StepName: "p"}})
		copied := f.stepItem(t, other, pending)
		copied["pk"] = &types.AttributeValueMemberS{Value: "r#" + run}
		dynamotest.Reseal(copied) // its checksums as if written here
		if _, err := f.c.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.cfg.Table), Item: copied}); err != nil {
			t.Fatal(err)
		}
		if p, err := f.open(t).ListSteps(ctx, &world.ListStepsParams{RunID: run}); err == nil {
			t.Errorf("ListSteps with a step item of no event: %d steps (the run has %d), no error", len(p.Items), len(steps))
		}
	})
	for _, edit := range []string{"REMOVE b", "REMOVE b, kb"} {
		t.Run("the head's b: "+edit, func(t *testing.T) {
			f := newGapsFixture(t)
			run, steps := serialRun(t, f.open(t), 3)
			f.editItem(t, run, "e~", edit, nil)
			w := f.open(t)
			if st, err := w.GetStep(ctx, &world.GetStepParams{RunID: run, StepID: steps[0]}); !errors.Is(err, world.ErrCorrupt) {
				t.Errorf("GetStep of a bare step: %+v, %v; want world.ErrCorrupt", st, err)
			}
			if p, err := w.ListSteps(ctx, &world.ListStepsParams{RunID: run}); !errors.Is(err, world.ErrCorrupt) {
				t.Errorf("ListSteps: %+v, %v; want world.ErrCorrupt", p, err)
			}
			// Without the check, the step's ID read as unused.
			_, err := f.open(t).Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{
				{CorrelationID: steps[0], Data: &world.StepCreated{StepName: "again"}}}})
			if !errors.Is(err, world.ErrCorrupt) {
				t.Errorf("step_created again for a bare step: %v, want world.ErrCorrupt", err)
			}
		})
	}
	t.Run("the head deleted", func(t *testing.T) {
		f := newGapsFixture(t)
		run, steps := serialRun(t, f.open(t), 3)
		f.deleteItem(t, run, "e~")
		if st, err := f.open(t).GetStep(ctx, &world.GetStepParams{RunID: run, StepID: steps[0]}); !errors.Is(err, world.ErrCorrupt) {
			t.Errorf("GetStep of a bare step of a run without its head: %+v, %v; want world.ErrCorrupt", st, err)
		}
	})
}
