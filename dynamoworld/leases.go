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

// The run lease is its own small item in the run's partition (sk "lease"),
// so that taking it costs one write unit whatever the size of the run, and
// the commits, which never touch it, never conflict with it. Each operation
// is a single conditional write: acquire succeeds when no one holds the
// lease, it has expired or the owner holds it; renew when the owner holds
// it unexpired; release gives it up when the owner holds it. A released
// lease of a live run keeps its item, with the mark of the log's end
// (floors.go).

func (w *store) leaseTTL(p *world.RunLeaseParams) (time.Duration, error) {
	return p.LeaseTTL(world.DefaultRunLease)
}

// AcquireRunLease takes the run's lease for p.Owner until now+TTL, or fails
// fast with a *world.RefusalError of world.ErrLeaseHeld naming the holder.
func (w *store) AcquireRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	ttl, err := w.leaseTTL(p)
	if err != nil {
		return nil, err
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	now := w.now()
	exp := now.Add(ttl)
	old, err := w.putLease(ctx, p.RunID, p.Owner, exp, func(e *expr) string {
		return e.notExists() + " OR attribute_not_exists(" + e.n(aLeaseOwner) + ") OR " + e.n(aLeaseOwner) + " = " + e.v(str(p.Owner)) +
			" OR " + e.n(aLeaseExp) + " <= " + e.v(num(now.UnixNano()))
	})
	if _, failed := conditionFailed(err); failed {
		owner, until := getS(old, aLeaseOwner), getT(old, aLeaseExp)
		return nil, &world.RefusalError{Kind: world.ErrLeaseHeld, Entity: p.RunID, Holder: owner, Until: until,
			Reason: fmt.Sprintf("leased by %s until %s", owner, until.UTC().Format(time.RFC3339Nano))}
	}
	if err != nil {
		return nil, err
	}
	return &world.RunLease{RunID: p.RunID, Owner: p.Owner, ExpiresAt: exp}, nil
}

// RenewRunLease extends a lease p.Owner holds unexpired, or fails with
// world.ErrLeaseLost.
func (w *store) RenewRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	ttl, err := w.leaseTTL(p)
	if err != nil {
		return nil, err
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	now := w.now()
	exp := now.Add(ttl)
	_, err = w.putLease(ctx, p.RunID, p.Owner, exp, func(e *expr) string {
		return e.n(aLeaseOwner) + " = " + e.v(str(p.Owner)) + " AND " + e.n(aLeaseExp) + " > " + e.v(num(now.UnixNano()))
	})
	if _, failed := conditionFailed(err); failed {
		return nil, fmt.Errorf("%w: run %s, owner %s", world.ErrLeaseLost, p.RunID, p.Owner)
	}
	if err != nil {
		return nil, err
	}
	return &world.RunLease{RunID: p.RunID, Owner: p.Owner, ExpiresAt: exp}, nil
}

// ReleaseRunLease gives the lease up if p.Owner holds it; anything else
// (expired, taken over, never taken) is not an error. The item of a run
// this World knows live stays, without its owner and expired, with the end
// of the log the World knows committed (lq, floors.go; never lowered);
// that of a run it knows ended is deleted.
func (w *store) ReleaseRunLease(ctx context.Context, p *world.RunLeaseParams) error {
	if _, err := w.leaseTTL(p); err != nil {
		return err
	}
	if err := w.enter(ctx); err != nil {
		return err
	}
	defer w.leave()
	var seq int64
	if s := w.cache.get(p.RunID); s != nil && s.run != nil {
		if s.run.Status.Terminal() {
			return w.dropLease(ctx, p)
		}
		seq = s.run.LastSeq
	}
	old, err := w.releaseLease(ctx, p.Owner, p.RunID, seq)
	if _, failed := conditionFailed(err); failed && seq > 0 && getS(old, aLeaseOwner) == p.Owner {
		// The mark is already as far (a release that knew more): keep it.
		_, err = w.releaseLease(ctx, p.Owner, p.RunID, 0)
	}
	if _, failed := conditionFailed(err); err != nil && !failed {
		return ddbErr("UpdateItem", w.cfg.Table, err)
	}
	return nil
}

// releaseLease removes the owner from the lease item on the condition that
// p.Owner holds it and sets its mark to seq when that raises it (seq 0:
// the mark is left as it is).
func (w *store) releaseLease(ctx context.Context, owner, runID string, seq int64) (item, error) {
	u := &updateBuilder{e: newExpr()}
	u.set(aLeaseExp, num(0)) // expired: code that predates lq takes it too
	u.del(aLeaseOwner)
	cond := u.e.n(aLeaseOwner) + " = " + u.e.v(str(owner))
	if seq > 0 {
		u.set(aLogFloor, num(seq))
		cond += " AND (attribute_not_exists(" + u.e.n(aLogFloor) + ") OR " + u.e.n(aLogFloor) + " < " + u.e.v(num(seq)) + ")"
	}
	_, err := w.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(w.cfg.Table), Key: leaseKey(runID).av(), ConditionExpression: aws.String(cond),
		UpdateExpression: aws.String(u.String()), ExpressionAttributeNames: u.e.nameMap(), ExpressionAttributeValues: u.e.valueMap(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	old, _ := conditionFailed(err)
	return old, err
}

// dropLease deletes the lease item of an ended run if p.Owner holds it.
func (w *store) dropLease(ctx context.Context, p *world.RunLeaseParams) error {
	e := newExpr()
	_, err := w.ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(w.cfg.Table), Key: leaseKey(p.RunID).av(),
		ConditionExpression:      aws.String(e.n(aLeaseOwner) + " = " + e.v(str(p.Owner))),
		ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
	})
	if _, failed := conditionFailed(err); err != nil && !failed {
		return ddbErr("DeleteItem", w.cfg.Table, err)
	}
	return nil
}

// putLease sets the lease's owner and expiry on cond, keeping the item's
// mark (lq), and returns the item as it was when the condition failed.
func (w *store) putLease(ctx context.Context, runID, owner string, exp time.Time, cond func(e *expr) string) (item, error) {
	u := &updateBuilder{e: newExpr()}
	u.set(aLeaseOwner, str(owner))
	u.set(aLeaseExp, num(exp.UnixNano()))
	u.del(attrTTL) // an ended run's item, swept by retention: not while held
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(w.cfg.Table), Key: leaseKey(runID).av(), ConditionExpression: aws.String(cond(u.e)),
		UpdateExpression: aws.String(u.String()), ExpressionAttributeNames: u.e.nameMap(), ExpressionAttributeValues: u.e.valueMap(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if w.capacity {
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
	out, err := w.ddb.UpdateItem(ctx, in)
	if err != nil {
		if old, failed := conditionFailed(err); failed {
			return old, err
		}
		return nil, ddbErr("UpdateItem", w.cfg.Table, err)
	}
	w.countWrite(derefCC(out.ConsumedCapacity)...)
	return nil, nil
}

// RenewStepLease extends the execution lease of a running step's current
// attempt: one conditional update (the step must be running p.Attempt).
// With p.Compensation it extends that of the step's compensation attempt
// (comp_lease.go).
// No event is written; a commit that relies on the old lease is caught by
// its lease condition.
func (w *store) RenewStepLease(ctx context.Context, p *world.RenewStepLeaseParams) (*world.Step, error) {
	switch {
	case p == nil || p.RunID == "" || p.StepID == "":
		return nil, invalid("run and step IDs required")
	case p.TTL < 0:
		return nil, invalid("step lease: negative TTL %s", p.TTL)
	}
	ttl := p.TTL
	if ttl == 0 {
		ttl = world.DefaultStepLease
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	if p.Compensation {
		return w.renewCompLease(ctx, p, ttl)
	}
	return w.renewStepLease(ctx, p, ttl)
}

func (w *store) renewStepLease(ctx context.Context, p *world.RenewStepLeaseParams, ttl time.Duration) (*world.Step, error) {
	now := w.now()
	u := &updateBuilder{e: newExpr()}
	u.set(aLeaseExp, num(now.Add(ttl).UnixNano()))
	u.set(aUpdated, num(now.UnixNano()))
	e := u.e
	cond := e.exists() + " AND " + e.n(aStatus) + " = " + e.v(str(string(world.StepStatusRunning))) + " AND " + e.n(aAttempt) + " = " + e.v(num(int64(p.Attempt)))
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
			return w.renewLazyStep(ctx, p, now, ttl)
		}
		return nil, fmt.Errorf("%w: step %s is %s at attempt %d, not running attempt %d", world.ErrConflict, p.StepID, getS(old, aStatus), getN(old, aAttempt), p.Attempt)
	}
	if err != nil {
		return nil, ddbErr("UpdateItem", w.cfg.Table, err)
	}
	return w.renewed(ctx, out)
}

// renewed counts a lease renewal's write and returns the step as the
// update left it (its claim-checked payloads fetched), cached.
func (w *store) renewed(ctx context.Context, out *dynamodb.UpdateItemOutput) (*world.Step, error) {
	w.countWrite(derefCC(out.ConsumedCapacity)...)
	if err := w.verified(out.Attributes); err != nil {
		return nil, err
	}
	fetched, err := w.cc.fetch(ctx, out.Attributes)
	if err != nil {
		return nil, err
	}
	st, err := decodeStep(out.Attributes, fetched)
	if err != nil {
		return nil, err
	}
	w.cache.setStep(st)
	return st, nil
}

func derefCC(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

// renewLazyStep renews the lease of a step that has no item (lazy.go): it
// writes the step's lease record (attempt and lease, never lowered; the
// write mark of the newest commit it read), then checks that the newest
// commit still lists the step (a commit that ended it left it bare: a
// conflict; one that took it over wrote its item, and the renewal is
// judged by the item path). A step that has
// no item and is not lazy is bare (ended) or absent.
func (w *store) renewLazyStep(ctx context.Context, p *world.RenewStepLeaseParams, now time.Time, ttl time.Duration) (*world.Step, error) {
	st, lastSeq, found, err := w.readLazyStepAt(ctx, p.RunID, p.StepID)
	if err != nil {
		return nil, err
	}
	if !found {
		it, err := w.getItem(ctx, stepKey(p.RunID, p.StepID))
		if err != nil {
			return nil, err
		}
		if it == nil {
			return nil, w.notRenewable(ctx, p)
		}
		return w.renewStepLease(ctx, p, ttl) // it has an item now
	}
	if st.Status != world.StepStatusRunning || st.Attempt != p.Attempt {
		return nil, fmt.Errorf("%w: step %s is %s at attempt %d, not running attempt %d", world.ErrConflict, p.StepID, st.Status, st.Attempt, p.Attempt)
	}
	lease := now.Add(ttl)
	rec := newEncItem(leaseRecordKey(p.RunID, p.StepID))
	setN(rec.it, aAttempt, int64(p.Attempt))
	setN(rec.it, aLeaseExp, lease.UnixNano())
	// The mark of the newest commit the renewal read: the commit that
	// holds the step's state is no newer, so a load that finds the log
	// shorter than the record says is refused (gaps.go).
	setN(rec.it, aWrittenAt, lastSeq)
	seal(rec.it)
	// An update, not a put: the TTL a run's end set on the record stays.
	u := diffUpdate(item{}, rec.it)
	e := u.e
	cond := "attribute_not_exists(" + e.n(attrSK) + ") OR " + e.n(aLeaseExp) + " < " + e.v(num(lease.UnixNano()))
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(w.cfg.Table), Key: leaseRecordKey(p.RunID, p.StepID).av(),
		UpdateExpression: aws.String(u.String()), ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
	}
	if w.capacity {
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
	out, err := w.ddb.UpdateItem(ctx, in)
	if _, failed := conditionFailed(err); !failed && err != nil {
		return nil, ddbErr("UpdateItem", w.cfg.Table, err)
	} else if !failed {
		w.countWrite(derefCC(out.ConsumedCapacity)...)
	} // failed: a later lease is recorded already
	// A commit may have changed the step meanwhile (ended it: bare; taken
	// it over: its item): it is still lazy only while the newest commit
	// lists it, as every such commit drops it from the list.
	newest, err := w.lastCommit(ctx, p.RunID)
	if err != nil {
		return nil, err
	}
	if _, lazy := decodeLazy(newest)[p.StepID]; !lazy {
		if it, err := w.getItem(ctx, stepKey(p.RunID, p.StepID)); err != nil {
			return nil, err
		} else if it != nil {
			return w.renewStepLease(ctx, p, ttl) // taken over meanwhile: judged on its item
		}
		return nil, w.notRenewable(ctx, p)
	}
	st.LeaseExpiresAt = lease
	st.UpdatedAt = now
	w.cache.setLease(st)
	c := *st
	return &c, nil
}

// notRenewable is the error of a renewal of a step that has neither an
// item nor a place in the newest commit's list: a bare step ended (a
// conflict), or none (not found).
func (w *store) notRenewable(ctx context.Context, p *world.RenewStepLeaseParams) error {
	st, err := w.bareStep(ctx, p.RunID, p.StepID)
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("%w: step %s of run %s", world.ErrNotFound, p.StepID, p.RunID)
	}
	return fmt.Errorf("%w: step %s is %s at attempt %d, not running attempt %d", world.ErrConflict, p.StepID, st.Status, st.Attempt, p.Attempt)
}
