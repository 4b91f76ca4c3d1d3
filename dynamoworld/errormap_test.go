package dynamoworld

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/skeinflow/skein/world"
)

var testIDs = world.NewIDSource(nil, nil)

func ev(corr string, d world.EventData) world.EventInput {
	return world.EventInput{CorrelationID: corr, Data: d}
}

func appendEvents(w *World, runID string, evs ...world.EventInput) (*world.AppendResult, error) {
	return w.Append(context.Background(), &world.AppendParams{RunID: runID, Events: evs})
}

// startRun creates and starts a run through the fake (blind: no read), so
// that the World caches it.
func startRun(t *testing.T, w *World) string {
	t.Helper()
	id := testIDs.New(world.PrefixRun)
	if _, err := appendEvents(w, id, ev("", &world.RunCreated{WorkflowName: "wf"}), ev("", &world.RunStarted{})); err != nil {
		t.Fatalf("creating a run: %v", err)
	}
	return id
}

// runItems returns the stored items of a run: head, body and a newest
// commit at r.LastSeq.
func runItems(t *testing.T, r *world.Run) map[itemKey]item {
	t.Helper()
	body, err := encodeRunBody(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := world.Event{RunID: r.RunID, EventID: testIDs.New(world.PrefixEvent), Seq: r.LastSeq, CreatedAt: r.CreatedAt, Data: &world.RunStarted{}}
	commit, _, err := encodeCommit(nil, r.RunID, r.LastSeq-1, []world.Event{last}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	setS(commit.it, aRunStatus, string(r.Status))
	setCounts(commit.it, 0, 0)
	return map[itemKey]item{
		runHeadKey(r.RunID): encodeRunHead(r, 0).it, runBodyKey(r.RunID): body.it,
		commitKey(r.RunID, r.LastSeq-1): commit.it,
	}
}

// fenceIndex is the index of the commit item (the fence) in a transaction.
func fenceIndex(in *dynamodb.TransactWriteItemsInput) int {
	for i, ti := range in.TransactItems {
		if ti.Put != nil && strings.HasPrefix(getS(ti.Put.Item, attrSK), prefCommit) {
			return i
		}
	}
	return -1
}

func TestRunCreatedRunExistsFromCancellationReason(t *testing.T) {
	ddb := &fakeDDB{}
	w := newFakeWorld(t, ddb, newFakeS3(), nil)
	id := testIDs.New(world.PrefixRun)
	ddb.twrite = func(_ int, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		return nil, cancel(len(in.TransactItems), map[int]string{indexOf(in, runHeadKey(id), "put"): "ConditionalCheckFailed"}, nil)
	}
	_, err := appendEvents(w, id, ev("", &world.RunCreated{WorkflowName: "wf", IdempotencyKey: "k"}))
	var re *world.RefusalError
	if !errors.As(err, &re) || re.Index != 0 || re.Entity != id || re.EventType != world.EventRunCreated || world.Status(err) != 409 {
		t.Fatalf("run_created on an existing run: %v, want a RefusalError at 0 naming run %s (409)", err, id)
	}
	if ddb.tget != nil {
		t.Fatal("unexpected read")
	}
}

func TestRunCreatedIdempotencyKeyTaken(t *testing.T) {
	ddb := &fakeDDB{}
	w := newFakeWorld(t, ddb, newFakeS3(), nil)
	id, other := testIDs.New(world.PrefixRun), testIDs.New(world.PrefixRun)
	ddb.twrite = func(_ int, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		i := indexOf(in, idemKey("key-1"), "put")
		if i < 0 {
			t.Fatal("run_created with a key writes no idempotency item")
		}
		return nil, cancel(len(in.TransactItems), map[int]string{i: "ConditionalCheckFailed"}, map[int]item{i: {aRun: str(other)}})
	}
	_, err := appendEvents(w, id, ev("", &world.RunCreated{WorkflowName: "wf", IdempotencyKey: "key-1"}))
	var re *world.RefusalError
	if !errors.As(err, &re) || re.Entity != other || re.Key != "key-1" || !errors.Is(err, world.ErrConflict) {
		t.Fatalf("taken idempotency key: %v, want a RefusalError naming %s and the key", err, other)
	}
}

func TestStaleFenceIsJudgedAgainOnAFreshRead(t *testing.T) {
	ddb := &fakeDDB{}
	w := newFakeWorld(t, ddb, newFakeS3(), nil)
	runID := startRun(t, w)
	step := testIDs.New(world.PrefixStep)
	if _, err := appendEvents(w, runID, ev(step, &world.StepCreated{StepName: "s"}), ev(step, &world.StepStarted{})); err != nil {
		t.Fatal(err)
	}
	// Another process completed the step meanwhile: our fence fails.
	ddb.twrite = func(_ int, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		return nil, cancel(len(in.TransactItems), map[int]string{fenceIndex(in): "ConditionalCheckFailed"}, nil)
	}
	now := time.Now().UTC()
	run := &world.Run{RunID: runID, WorkflowName: "wf", Status: world.RunStatusRunning, LastSeq: 5, CreatedAt: now, UpdatedAt: now}
	stored := runItems(t, run)
	st, _ := encodeStep(&world.Step{RunID: runID, StepID: step, StepName: "s", Status: world.StepStatusCompleted, Attempt: 1, CreatedAt: now}, 0)
	stored[stepKey(runID, step)] = st.it
	serveItems(ddb, stored)
	tget, reads := ddb.tget, 0
	ddb.tget = func(in *dynamodb.TransactGetItemsInput) (*dynamodb.TransactGetItemsOutput, error) {
		reads++
		return tget(in)
	}
	_, err := appendEvents(w, runID, ev(step, &world.StepCompleted{Result: json.RawMessage(`1`)}))
	var ce *world.RefusalError
	if !errors.As(err, &ce) || !errors.Is(err, world.ErrConflict) || reads != 1 {
		t.Fatalf("step_completed on a step completed elsewhere: %v after %d reads, want a 409 RefusalError after one read", err, reads)
	}
}

func TestTokenHeldElsewhereBecomesHookConflict(t *testing.T) {
	ddb := &fakeDDB{}
	w := newFakeWorld(t, ddb, newFakeS3(), nil)
	runID := startRun(t, w)
	holderRun, holderHook := testIDs.New(world.PrefixRun), testIDs.New(world.PrefixHook)
	now := time.Now().UTC()
	holder := &world.Hook{RunID: holderRun, HookID: holderHook, Token: "tok", CreatedAt: now}
	stored := runItems(t, &world.Run{RunID: holderRun, WorkflowName: "wf", Status: world.RunStatusRunning, LastSeq: 3, CreatedAt: now})
	stored[hookKey(holderHook)] = encodeHook(hookKey(holderHook), holder, true).it
	serveItems(ddb, stored)
	ddb.twrite = func(n int, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		if i := indexOf(in, tokenKey("tok"), "put"); i >= 0 {
			return nil, cancel(len(in.TransactItems), map[int]string{i: "ConditionalCheckFailed"}, map[int]item{i: encodeToken(holder).it})
		}
		if indexOf(in, tokenKey("tok"), "check") < 0 {
			t.Fatalf("the hook_conflict commit does not check the token's holder")
		}
		return &dynamodb.TransactWriteItemsOutput{}, nil
	}
	hook := testIDs.New(world.PrefixHook)
	res, err := appendEvents(w, runID, ev(hook, &world.HookCreated{Token: "tok"}))
	if err != nil {
		t.Fatal(err)
	}
	d, ok := res.Results[0].Event.Data.(*world.HookConflict)
	if !ok || d.ConflictingRunID != holderRun || res.Results[0].Hook != nil {
		t.Fatalf("hook_created on a held token: %+v, want hook_conflict naming %s", res.Results[0].Event, holderRun)
	}
}

func TestStaleTokenIsTakenOver(t *testing.T) {
	ddb := &fakeDDB{}
	w := newFakeWorld(t, ddb, newFakeS3(), nil)
	runID := startRun(t, w)
	oldRun, oldHook := testIDs.New(world.PrefixRun), testIDs.New(world.PrefixHook)
	now := time.Now().UTC()
	old := &world.Hook{RunID: oldRun, HookID: oldHook, Token: "tok", CreatedAt: now}
	// The holder's run has ended; its clean-up never ran.
	stored := runItems(t, &world.Run{RunID: oldRun, WorkflowName: "wf", Status: world.RunStatusCompleted, LastSeq: 3, CreatedAt: now})
	stored[hookKey(oldHook)] = encodeHook(hookKey(oldHook), old, true).it
	serveItems(ddb, stored)
	ddb.twrite = func(n int, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		i := indexOf(in, tokenKey("tok"), "put")
		if n == 2 { // the run's creation was write 1
			return nil, cancel(len(in.TransactItems), map[int]string{i: "ConditionalCheckFailed"}, map[int]item{i: encodeToken(old).it})
		}
		if cond := aws.ToString(in.TransactItems[i].Put.ConditionExpression); !strings.Contains(cond, " OR ") {
			t.Fatalf("the take-over put's condition %q does not allow the stale holder", cond)
		}
		return &dynamodb.TransactWriteItemsOutput{}, nil
	}
	hook := testIDs.New(world.PrefixHook)
	res, err := appendEvents(w, runID, ev(hook, &world.HookCreated{Token: "tok"}))
	if err != nil || res.Results[0].Event.Type() != world.EventHookCreated {
		t.Fatalf("hook_created on a stale token: %v, %v; want hook_created", res, err)
	}
}

func TestTransientCancellationsAreRetried(t *testing.T) {
	for _, code := range []string{"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"} {
		t.Run(code, func(t *testing.T) {
			ddb := &fakeDDB{}
			w := newFakeWorld(t, ddb, newFakeS3(), nil)
			runID := startRun(t, w)
			ddb.twrite = func(n int, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
				if n < 4 {
					return nil, cancel(len(in.TransactItems), map[int]string{0: code}, nil)
				}
				return &dynamodb.TransactWriteItemsOutput{}, nil
			}
			res, err := appendEvents(w, runID, ev(testIDs.New(world.PrefixWait), &world.WaitCreated{ResumeAt: time.Now()}))
			if err != nil || res.Run.LastSeq != 3 {
				t.Fatalf("append after two %s cancellations: %v, %v", code, res, err)
			}
			if len(ddb.writes) != 4 {
				t.Fatalf("%d transactions, want 4 (create, 2 cancelled, 1 committed)", len(ddb.writes))
			}
		})
	}
}

func TestValidationReasonIsAnError(t *testing.T) {
	ddb := &fakeDDB{}
	w := newFakeWorld(t, ddb, newFakeS3(), nil)
	runID := startRun(t, w)
	ddb.twrite = func(_ int, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		return nil, cancel(len(in.TransactItems), map[int]string{1: "ValidationError"}, nil)
	}
	_, err := appendEvents(w, runID, ev(testIDs.New(world.PrefixWait), &world.WaitCreated{ResumeAt: time.Now()}))
	if err == nil || world.Status(err) != 500 || !strings.Contains(err.Error(), "DynamoDB TransactWriteItems") || !strings.Contains(err.Error(), "ValidationError") {
		t.Fatalf("a ValidationError reason: %v, want a 500 naming DynamoDB and the reason", err)
	}
}

func TestUnknownOutcomeDropsTheSnapshot(t *testing.T) {
	ddb := &fakeDDB{}
	w := newFakeWorld(t, ddb, newFakeS3(), nil)
	runID := startRun(t, w)
	ddb.twrite = func(int, *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		return nil, &smithy.GenericAPIError{Code: "InternalServerError", Message: "boom"}
	}
	_, err := appendEvents(w, runID, ev(testIDs.New(world.PrefixWait), &world.WaitCreated{ResumeAt: time.Now()}))
	var ae smithy.APIError
	if err == nil || !errors.As(err, &ae) || !strings.Contains(err.Error(), `table "skein-test"`) {
		t.Fatalf("a failed transaction: %v, want the SDK error naming the table", err)
	}
	if w.s.cache.get(runID) != nil {
		t.Fatal("the snapshot survived a commit of unknown outcome")
	}
}

func TestStepStartedChecksTheLeaseItJudged(t *testing.T) {
	// lazy: the step was created and started in one commit and has no item
	// (its first item's absence is the condition); item: it has one (its
	// lease is the condition).
	for _, lazy := range []bool{true, false} {
		ddb := &fakeDDB{}
		w := newFakeWorld(t, ddb, newFakeS3(), nil)
		runID := startRun(t, w)
		step := testIDs.New(world.PrefixStep)
		evs := [][]world.EventInput{{ev(step, &world.StepCreated{StepName: "s"}), ev(step, &world.StepStarted{LeaseTTL: time.Millisecond})}}
		if !lazy {
			evs = [][]world.EventInput{{ev(step, &world.StepCreated{StepName: "s"})}, {ev(step, &world.StepStarted{LeaseTTL: time.Millisecond})}}
		}
		for _, e := range evs {
			if _, err := appendEvents(w, runID, e...); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(5 * time.Millisecond)
		// The cached lease has expired, but another process renewed it.
		now := time.Now().UTC()
		stored := runItems(t, &world.Run{RunID: runID, WorkflowName: "wf", Status: world.RunStatusRunning, LastSeq: 4, CreatedAt: now})
		renewed := &world.Step{RunID: runID, StepID: step, StepName: "s", Status: world.StepStatusRunning, Attempt: 1, LeaseExpiresAt: now.Add(time.Hour), CreatedAt: now}
		st, _ := encodeStep(renewed, 0)
		stored[stepKey(runID, step)] = st.it
		serveItems(ddb, stored)
		ddb.twrite = func(_ int, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
			var i int
			if lazy {
				i = indexOf(in, stepKey(runID, step), "put")
				if i < 0 || !strings.Contains(aws.ToString(in.TransactItems[i].Put.ConditionExpression), "attribute_not_exists") {
					t.Fatal("step_started on a running lazy step does not check that it has no item")
				}
			} else {
				i = indexOf(in, stepKey(runID, step), "update")
				if i < 0 || !strings.Contains(aws.ToString(in.TransactItems[i].Update.ConditionExpression), "#lx") {
					t.Fatal("step_started on a running step does not check its lease")
				}
			}
			return nil, cancel(len(in.TransactItems), map[int]string{i: "ConditionalCheckFailed"}, nil)
		}
		_, err := appendEvents(w, runID, ev(step, &world.StepStarted{}))
		var le *world.RefusalError
		if !errors.As(err, &le) || le.Kind != world.ErrConflict || le.Attempt != 1 {
			t.Fatalf("lazy %v: step_started against a renewed lease: %v, want a refusal of attempt 1 leased", lazy, err)
		}
	}
}

func TestRenewStepLeaseRefusals(t *testing.T) {
	ddb := &fakeDDB{}
	w := newFakeWorld(t, ddb, newFakeS3(), nil)
	ddb.getItem = func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) { return &dynamodb.GetItemOutput{}, nil }
	for _, tc := range []struct {
		old  item
		want error
	}{
		{nil, world.ErrNotFound},
		{item{aStatus: str("completed"), aAttempt: num(2)}, world.ErrConflict},
	} {
		ddb.update = func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
			return nil, &types.ConditionalCheckFailedException{Message: aws.String("failed"), Item: tc.old}
		}
		_, err := w.RenewStepLease(context.Background(), &world.RenewStepLeaseParams{RunID: testIDs.New(world.PrefixRun), StepID: testIDs.New(world.PrefixStep), Attempt: 2})
		if !errors.Is(err, tc.want) {
			t.Fatalf("RenewStepLease refused with old item %v: %v, want %v", tc.old, err, tc.want)
		}
	}
}

func TestAcquireRunLeaseNamesTheHolder(t *testing.T) {
	ddb := &fakeDDB{}
	w := newFakeWorld(t, ddb, newFakeS3(), nil)
	exp := time.Now().Add(time.Minute).UTC()
	ddb.update = func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
		return nil, &types.ConditionalCheckFailedException{Item: item{aLeaseOwner: str("a"), aLeaseExp: num(exp.UnixNano())}}
	}
	_, err := w.AcquireRunLease(context.Background(), &world.RunLeaseParams{RunID: "wrun_x", Owner: "b"})
	var le *world.RefusalError
	if !errors.As(err, &le) || le.Kind != world.ErrLeaseHeld || le.Holder != "a" || !le.Until.Equal(exp) {
		t.Fatalf("AcquireRunLease of a held lease: %v, want a refusal naming holder a until %v", err, exp)
	}
}

func TestStartupCheckNamesWhatIsMissing(t *testing.T) {
	notFound := func(code string) error { return &smithy.GenericAPIError{Code: code, Message: "not found"} }
	ddb := &fakeDDB{describe: func(*dynamodb.DescribeTableInput) (*dynamodb.DescribeTableOutput, error) {
		return nil, notFound("ResourceNotFoundException")
	}}
	s3c := newFakeS3()
	s3c.headErr = notFound("NotFound")
	_, err := New(context.Background(), Config{
		DynamoDB: ddb, SQS: &fakeSQS{err: notFound("AWS.SimpleQueueService.NonExistentQueue")}, S3: s3c, streams: fakeStreams{},
		Table: "missing-table", QueueURL: "http://sqs.local/000000000000/missing-queue", Bucket: "missing-bucket",
	})
	for _, want := range []string{`DynamoDB table "missing-table" does not exist`, "SQS queue http://sqs.local/000000000000/missing-queue does not exist", `S3 bucket "missing-bucket" does not exist`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("New on missing resources: %v, want it to say %q", err, want)
		}
	}
	// Another failure (credentials, endpoint) names the service and the call.
	ddb.describe = func(*dynamodb.DescribeTableInput) (*dynamodb.DescribeTableOutput, error) {
		return nil, &smithy.GenericAPIError{Code: "UnrecognizedClientException", Message: "The security token included in the request is invalid"}
	}
	_, err = New(context.Background(), Config{DynamoDB: ddb, SQS: &fakeSQS{}, S3: newFakeS3(), streams: fakeStreams{}, Table: "t-1", QueueURL: "http://q/1", Bucket: "b-1"})
	if err == nil || !strings.Contains(err.Error(), `DynamoDB DescribeTable on table "t-1"`) || !strings.Contains(err.Error(), "security token") {
		t.Fatalf("New with bad credentials: %v, want the DynamoDB call and the cause", err)
	}
}

func TestConfigValidation(t *testing.T) {
	_, err := New(context.Background(), Config{Table: "x", ClaimCheckThreshold: 500 << 10})
	for _, want := range []string{"DynamoDB client required", "QueueURL required", "table name \"x\"", "ClaimCheckThreshold"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("New with a bad config: %v, want it to mention %q", err, want)
		}
	}
}

// TestCommitThatLandedIsRecognized: a commit applied by an attempt whose
// answer was lost, then reported cancelled by a retry, is found at the
// fence with this Append's event IDs and reported as done, not refused.
func TestCommitThatLandedIsRecognized(t *testing.T) {
	ddb := &fakeDDB{}
	w := newFakeWorld(t, ddb, newFakeS3(), nil)
	runID := startRun(t, w)
	var landed item
	ddb.twrite = func(n int, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		i := fenceIndex(in)
		if landed == nil {
			landed = in.TransactItems[i].Put.Item // applied; the answer says otherwise
			return nil, cancel(len(in.TransactItems), map[int]string{i: "TransactionConflict"}, nil)
		}
		return nil, cancel(len(in.TransactItems), map[int]string{i: "ConditionalCheckFailed"}, map[int]item{i: landed})
	}
	wait := testIDs.New(world.PrefixWait)
	res, err := appendEvents(w, runID, ev(wait, &world.WaitCreated{ResumeAt: time.Now()}))
	if err != nil || res.Results[0].Event == nil || res.Results[0].Event.Seq != 3 {
		t.Fatalf("an append whose commit landed unseen: %+v, %v; want its result", res, err)
	}
	if got := getS(landed, attrSK); got != commitSK(2) {
		t.Fatalf("the commit landed at %s", got)
	}
}
