package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/world"
)

// recordedError is one error of testdata/recorded_errors.json: the
// ErrorData the codec recorded for it before the error types were merged
// (commit 22f6da6), and the message its decoding had then.
type recordedError struct {
	Name    string           `json:"name"`
	Data    *world.ErrorData `json:"data"`
	Message string           `json:"message"`
}

// TestRecordedErrorsDecode decodes errors as logs written before the error
// types were merged hold them, and checks that each comes back as its new
// Go type with what errors.Is and errors.As found then, its message
// unchanged, and that encoding it again records the same bytes.
func TestRecordedErrorsDecode(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/recorded_errors.json")
	if err != nil {
		t.Fatal(err)
	}
	var recs []recordedError
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatal(err)
	}
	checks := recordedChecks()
	c := newCodec()
	for _, r := range recs {
		t.Run(r.Name, func(t *testing.T) {
			got := c.decode(r.Data)
			if got.Error() != r.Message {
				t.Errorf("message %q, want %q as before", got.Error(), r.Message)
			}
			again, _ := json.Marshal(c.encode(got))
			want, _ := json.Marshal(r.Data)
			if string(again) != string(want) {
				t.Errorf("encoded again as %s, want the recorded %s", again, want)
			}
			check, ok := checks[r.Name]
			if !ok {
				t.Fatalf("no check for %q", r.Name)
			}
			check(t, got)
		})
	}
	if len(recs) != len(checks) {
		t.Errorf("%d recorded errors, %d checks", len(recs), len(checks))
	}
}

// as returns err as a T (errors.As), failing t if it is none.
func as[T error](t *testing.T, err error) T {
	t.Helper()
	var v T
	if !errors.As(err, &v) {
		t.Fatalf("%v (%T) is no %s", err, err, reflect.TypeFor[T]())
	}
	return v
}

// is fails t unless errors.Is(err, target) is want.
func is(t *testing.T, err, target error, want bool) {
	t.Helper()
	if errors.Is(err, target) != want {
		t.Errorf("errors.Is(%v, %v) = %v, want %v", err, target, !want, want)
	}
}

// recordedChecks are the checks of each recorded error once decoded.
func recordedChecks() map[string]func(*testing.T, error) {
	return map[string]func(*testing.T, error){
		"fatal": func(t *testing.T, err error) {
			if f := as[*fatalError](t, err); f.Err.Error() != "card declined" {
				t.Errorf("fatal %v, want card declined", f.Err)
			}
			if f := failureOf(err, time.Time{}); !f.Fatal {
				t.Errorf("a step failing with it again is not fatal: %+v", f)
			}
		},
		"retry-after": func(t *testing.T, err error) {
			now := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
			if r := as[*retryableError](t, err); r.After != 90*time.Second || !r.At.IsZero() {
				t.Errorf("%+v, want a retry after 90s", r)
			}
			if f := failureOf(err, now); f.Fatal || !f.RetryAt.Equal(now.Add(90*time.Second)) {
				t.Errorf("failure %+v, want a retry at %v", f, now.Add(90*time.Second))
			}
		},
		"retry-at": func(t *testing.T, err error) {
			at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
			if f := failureOf(err, time.Time{}); !f.RetryAt.Equal(at) {
				t.Errorf("failure %+v, want a retry at %v", f, at)
			}
		},
		"serialization": func(t *testing.T, err error) {
			se := as[*SerializationError](t, err)
			if se.What != `arguments of step "charge"` || !se.Decode || se.hookPayload() {
				t.Errorf("%+v, want the step's arguments, decoding", se)
			}
		},
		"hook-conflict": func(t *testing.T, err error) {
			if hc := as[*HookConflictError](t, err); hc.Token != "approve-42" || hc.ConflictingRunID != "wrun_01" {
				t.Errorf("%+v", hc)
			}
		},
		"hook-not-found": func(t *testing.T, err error) {
			re := as[*RequestError](t, err)
			if re.Kind != world.ErrNotFound || re.Token != "approve-43" {
				t.Errorf("%+v, want a hook not found, token approve-43", re)
			}
			is(t, err, world.ErrNotFound, true)
		},
		"hook-payload": func(t *testing.T, err error) {
			checkPayload(t, err, "approve-44", "hook_01", "main.Approval")
		},
		"step-fatal": func(t *testing.T, err error) {
			if se := as[*StepError](t, err); se.Step != "charge" || se.StepID != "step_01" || se.Attempt != 3 {
				t.Errorf("%+v", se)
			}
			as[*fatalError](t, err)
		},
		"step-timeout": func(t *testing.T, err error) {
			if se := as[*StepError](t, err); se.Step != "slow" || se.Attempt != 2 {
				t.Errorf("%+v", se)
			}
			if te := as[*stepTimeoutError](t, err); te.Step != "slow" || te.Attempt != 2 || te.Timeout != 5*time.Second || te.Err != nil {
				t.Errorf("%+v", te)
			}
			is(t, err, context.DeadlineExceeded, true)
		},
		"step-timeout-err": func(t *testing.T, err error) {
			if te := as[*stepTimeoutError](t, err); te.Timeout != time.Second || te.Err == nil {
				t.Errorf("%+v, want the step's error kept", te)
			}
			is(t, err, context.DeadlineExceeded, true)
		},
		"run-failed": func(t *testing.T, err error) {
			rf := as[*RunFailedError](t, err)
			if rf.RunID != "wrun_02" || rf.Code != world.CodeHookPayloadInvalid {
				t.Errorf("%+v, want run wrun_02 failed with %s", rf, world.CodeHookPayloadInvalid)
			}
			checkPayload(t, err, "t", "hook_02", "int")
		},
		"run-cancelled": func(t *testing.T, err error) { is(t, err, ErrRunCancelled, true) },
		"all-failed": func(t *testing.T, err error) {
			multi, ok := err.(interface{ Unwrap() []error })
			if !ok || len(multi.Unwrap()) != 2 {
				t.Fatalf("%v (%T), want a join of 2 errors", err, err)
			}
			members := multi.Unwrap()
			if se := as[*StepError](t, members[0]); se.Step != "a" {
				t.Errorf("%+v", se)
			}
			as[*fatalError](t, members[0])
			checkPayload(t, members[1], "t2", "hook_03", "int")
		},
		"join": func(t *testing.T, err error) {
			re := as[*RequestError](t, err)
			if re.Kind != world.ErrNotFound || re.Token != "t3" {
				t.Errorf("%+v, want a hook not found, token t3", re)
			}
		},
		"compensation": func(t *testing.T, err error) {
			if ce := as[*CompensationError](t, err); ce.Step != "charge" || ce.StepID != "step_04" {
				t.Errorf("%+v", ce)
			}
			if se := as[*StepError](t, err); se.Step != "refund" || se.Attempt != 2 {
				t.Errorf("%+v", se)
			}
		},
		// A step's refused request was recorded under its Go type's name,
		// which no type has now: it decodes, as it did, to an *Error
		// keeping that name and the message (and no errors.Is).
		"idempotency-conflict": func(t *testing.T, err error) {
			e := as[*Error](t, err)
			if c := as[*Error](t, e.Cause); c.Type != typeIdempotencyConflict {
				t.Errorf("cause %+v, want type %s", c, typeIdempotencyConflict)
			}
			is(t, err, world.ErrConflict, false)
		},
		"input": func(t *testing.T, err error) {
			if e := as[*Error](t, err); e.Type != typeInput {
				t.Errorf("%+v, want type %s", e, typeInput)
			}
		},
		"unknown-workflow": func(t *testing.T, err error) {
			if e := as[*Error](t, err); e.Type != typeUnknownWorkflow {
				t.Errorf("%+v, want type %s", e, typeUnknownWorkflow)
			}
		},
		"canceled": func(t *testing.T, err error) { is(t, err, context.Canceled, true) },
		"deadline": func(t *testing.T, err error) { is(t, err, context.DeadlineExceeded, true) },
	}
}

// TestRequestErrorRecordedAsBefore checks that each kind of *RequestError
// is recorded as the type it replaces was.
func TestRequestErrorRecordedAsBefore(t *testing.T) {
	t.Parallel()
	c := newCodec()
	for _, tc := range []struct {
		err      *RequestError
		typ      string
		cause    bool
		contains string
	}{
		{&RequestError{Kind: world.ErrNotFound, Token: "tok"}, typeHookNotFound, false, `hook with token "tok" not found`},
		{&RequestError{Kind: world.ErrConflict, Key: "k", RunID: "r", Workflow: "w", Requested: "v"}, typeIdempotencyConflict, false, `already started run r of workflow "w", not "v"`},
		{&RequestError{Kind: world.ErrInvalid, Workflow: "w", Err: errors.New("bad")}, typeInput, true, `input of workflow "w" does not decode into its input type: bad (no run created)`},
		{&RequestError{Kind: ErrUnknownWorkflow, Workflow: "w"}, typeUnknownWorkflow, false, `workflow "w" is not registered`},
	} {
		d := c.encode(tc.err)
		if d.Type != tc.typ || (d.Cause != nil) != tc.cause || len(d.Errors) != 0 || d.Message != tc.err.Error() {
			t.Errorf("%v recorded as %+v, want type %s", tc.err, d, tc.typ)
		}
		if !errors.Is(tc.err, tc.err.Kind) || !strings.Contains(tc.err.Error(), tc.contains) {
			t.Errorf("%v: want errors.Is its Kind and a message saying %q", tc.err, tc.contains)
		}
	}
}

// checkPayload fails t unless err is, or wraps, a hook payload that did
// not decode: a *SerializationError with token, hookID and the type.
func checkPayload(t *testing.T, err error, token, hookID, typ string) {
	t.Helper()
	se := as[*SerializationError](t, err)
	if se.Token != token || se.HookID != hookID || se.What != typ || !se.Decode || se.Err == nil {
		t.Errorf("%+v, want hook %s (%s) payload of type %s", se, token, hookID, typ)
	}
}

// failureOf is what the codec records of a step that failed with err.
func failureOf(err error, now time.Time) *engine.Failure {
	c := newCodec()
	return c.failure(err, now)
}
