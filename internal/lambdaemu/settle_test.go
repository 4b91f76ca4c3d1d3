package lambdaemu

import (
	"errors"
	"slices"
	"testing"
)

func TestSettle(t *testing.T) {
	t.Parallel()
	batch := []string{"m1", "m2", "m3"}
	fnErr := &FunctionError{Type: "errorString", Message: "boom"}

	cases := []struct {
		name        string
		report      bool // ReportBatchItemFailures
		payload     string
		err         error
		wantDelete  []string
		batchFailed bool
	}{
		// Function errors: delete nothing, whatever the response type.
		{name: "function error with ReportBatchItemFailures", report: true, err: fnErr, batchFailed: true},
		{name: "function error without ReportBatchItemFailures", report: false, err: fnErr, batchFailed: true},
		{name: "timeout", report: true, err: &FunctionError{Type: "Sandbox.Timedout"}, batchFailed: true},
		{name: "harness error", report: true, err: errors.New("cannot start"), batchFailed: true},
		{name: "function error ignores a payload", report: true, payload: `{"batchItemFailures":[]}`, err: fnErr, batchFailed: true},

		// Success without ReportBatchItemFailures: delete the whole batch, even if failures are listed.
		{name: "no report: empty payload", report: false, payload: ``, wantDelete: batch},
		{name: "no report: listed failures are ignored", report: false, payload: `{"batchItemFailures":[{"itemIdentifier":"m1"}]}`, wantDelete: batch},
		{name: "no report: invalid JSON is ignored", report: false, payload: `{not json`, wantDelete: batch},

		// Success with ReportBatchItemFailures: all succeeded.
		{name: "empty response", report: true, payload: ``, wantDelete: batch},
		{name: "whitespace response", report: true, payload: " \n", wantDelete: batch},
		{name: "null response", report: true, payload: `null`, wantDelete: batch},
		{name: "empty object", report: true, payload: `{}`, wantDelete: batch},
		{name: "null batchItemFailures", report: true, payload: `{"batchItemFailures":null}`, wantDelete: batch},
		{name: "empty batchItemFailures", report: true, payload: `{"batchItemFailures":[]}`, wantDelete: batch},
		{name: "other fields are ignored", report: true, payload: `{"batchItemFailures":[],"echo":{"x":1}}`, wantDelete: batch},

		// Partial failures: delete every message not listed.
		{name: "one failed", report: true, payload: `{"batchItemFailures":[{"itemIdentifier":"m2"}]}`, wantDelete: []string{"m1", "m3"}},
		{name: "two failed", report: true, payload: `{"batchItemFailures":[{"itemIdentifier":"m3"},{"itemIdentifier":"m1"}]}`, wantDelete: []string{"m2"}},
		{name: "listed twice", report: true, payload: `{"batchItemFailures":[{"itemIdentifier":"m2"},{"itemIdentifier":"m2"}]}`, wantDelete: []string{"m1", "m3"}},
		{name: "all failed", report: true, payload: `{"batchItemFailures":[{"itemIdentifier":"m1"},{"itemIdentifier":"m2"},{"itemIdentifier":"m3"}]}`, wantDelete: nil},

		// Responses Lambda rejects: the whole batch failed.
		{name: "identifier not in batch", report: true, payload: `{"batchItemFailures":[{"itemIdentifier":"m2"},{"itemIdentifier":"zz"}]}`, batchFailed: true},
		{name: "empty identifier", report: true, payload: `{"batchItemFailures":[{"itemIdentifier":""}]}`, batchFailed: true},
		{name: "null identifier", report: true, payload: `{"batchItemFailures":[{"itemIdentifier":null}]}`, batchFailed: true},
		{name: "missing identifier (bad key name)", report: true, payload: `{"batchItemFailures":[{"itemId":"m1"}]}`, batchFailed: true},
		{name: "identifier not a string", report: true, payload: `{"batchItemFailures":[{"itemIdentifier":1}]}`, batchFailed: true},
		{name: "entry not an object", report: true, payload: `{"batchItemFailures":["m1"]}`, batchFailed: true},
		{name: "null entry", report: true, payload: `{"batchItemFailures":[null]}`, batchFailed: true},
		{name: "batchItemFailures not a list", report: true, payload: `{"batchItemFailures":{"itemIdentifier":"m1"}}`, batchFailed: true},
		{name: "invalid JSON", report: true, payload: `{"batchItemFailures":[`, batchFailed: true},
		{name: "JSON string response", report: true, payload: `"ok"`, batchFailed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Settle(batch, tc.report, []byte(tc.payload), tc.err)
			if got.BatchFailed != tc.batchFailed {
				t.Fatalf("BatchFailed = %v, want %v (%s)", got.BatchFailed, tc.batchFailed, got.Reason)
			}
			if !slices.Equal(got.Delete, tc.wantDelete) {
				t.Fatalf("Delete = %v, want %v (%s)", got.Delete, tc.wantDelete, got.Reason)
			}
			if tc.batchFailed && len(got.Delete) != 0 {
				t.Fatalf("a failed batch deletes nothing, got %v", got.Delete)
			}
			if got.Reason == "" {
				t.Fatal("no reason")
			}
		})
	}
}
