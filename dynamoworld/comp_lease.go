package dynamoworld

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
)

// Compensation leases. RenewStepLease with p.Compensation extends the lease
// of a compensation attempt (clx) with one conditional update: the step is
// compensating (st), at compensation attempt p.Attempt (cat), with the
// attempt running (clx present: a scheduled retry has none). A compensating
// step always has its item (comp_started on a bare step writes it), so
// there is no lazy or bare case to write. Like a step's lease,
// the renewal writes no event: comp_started taking over an attempt whose
// lease it judged expired checks that clx is still what it judged
// (stepDiff), so a renewal it did not see sends it back to judge again.

// renewCompLease is RenewStepLease of a compensation attempt.
func (w *store) renewCompLease(ctx context.Context, p *world.RenewStepLeaseParams, ttl time.Duration) (*world.Step, error) {
	now := w.now()
	u := &updateBuilder{e: newExpr()}
	u.set(aCompLeaseExp, num(now.Add(ttl).UnixNano()))
	u.set(aUpdated, num(now.UnixNano()))
	e := u.e
	cond := e.exists() + " AND " + e.n(aStatus) + " = " + e.v(str(string(world.StepStatusCompensating))) +
		" AND " + e.n(aCompAttempt) + " = " + e.v(num(int64(p.Attempt))) + " AND attribute_exists(" + e.n(aCompLeaseExp) + ")"
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(w.cfg.Table), Key: stepKey(p.RunID, p.StepID).av(),
		UpdateExpression: aws.String(u.String()), ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if w.capacity {
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
	out, err := w.ddb.UpdateItem(ctx, in)
	if old, failed := conditionFailed(err); failed {
		if len(old) == 0 {
			return nil, w.compLeaseNoItem(ctx, p)
		}
		state := "no attempt running"
		if _, ok := old[aCompLeaseExp]; ok {
			state = "an attempt running"
		}
		return nil, fmt.Errorf("%w: step %s is %s at compensation attempt %d (%s), not running compensation attempt %d",
			world.ErrConflict, p.StepID, getS(old, aStatus), getN(old, aCompAttempt), state, p.Attempt)
	}
	if err != nil {
		return nil, ddbErr("UpdateItem", w.cfg.Table, err)
	}
	return w.renewed(ctx, out)
}

// compLeaseNoItem is the refusal of a compensation lease renewal of a step
// without an item: a lazy step (running, not compensating) or a bare one
// (ended, not compensating) conflicts; no step at all is not found.
func (w *store) compLeaseNoItem(ctx context.Context, p *world.RenewStepLeaseParams) error {
	st, found, err := w.readLazyStep(ctx, p.RunID, p.StepID)
	if err != nil {
		return err
	}
	if found {
		return fmt.Errorf("%w: step %s is %s, not running compensation attempt %d", world.ErrConflict, p.StepID, st.Status, p.Attempt)
	}
	it, err := w.getItem(ctx, stepKey(p.RunID, p.StepID))
	switch {
	case err != nil:
		return err
	case it == nil:
		return w.notRenewable(ctx, p) // bare (ended, not compensating) or absent
	}
	// It got its item meanwhile (its lazy state was committed over): a step
	// that ran a moment ago is not compensating.
	return fmt.Errorf("%w: step %s is %s, not running compensation attempt %d", world.ErrConflict, p.StepID, getS(it, aStatus), p.Attempt)
}
