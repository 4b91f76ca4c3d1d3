package integration

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/skeinflow/skein/internal/lambdaemu"
)

// The flow function reports a record failed when its invocation's deadline
// comes before the record is done (handler/doc.go, "Time budget"): the
// engine stops starting work at deadline-TimeBudgetMargin, but what is in
// flight then (a commit, the step outcomes to record, the continuation to
// enqueue) still has to finish, and on a loaded machine the requests it
// makes can outlast the rest of the margin. The handler then cancels the
// record at deadline-ReturnMargin, logs why, answers in time and reports
// the record failed; SQS delivers it again and the next delivery finishes
// the work. That is the documented behaviour, not a fault: a test whose
// subject is not the time budget accepts such a record, provided the log
// says the deadline cut it off and a later delivery of the same message was
// handled (deleted). Every other failed record, a batch that failed as a
// whole, and a cut-off record never handled afterwards still fail the test.

// isDeadlineCutoff reports whether a handler log message says a record was
// reported failed because the invocation's deadline came (handler/sqs.go).
func isDeadlineCutoff(message string) bool {
	switch message {
	case "handler: message still in progress at the deadline; reported failed",
		"handler: no time left to start the message; reported failed",
		"handler: message cut off at the deadline; reported failed":
		return true
	}
	return false
}

// batchCheck is what checkBatches found.
type batchCheck struct {
	errs    []string // the failures the test reports
	cutoffs []string // records cut off at a deadline, then delivered again and handled
}

// checkBatches judges the batches an event source mapping settled, with
// the flow function's JSON log records (logBuffer.records). A batch must
// not fail as a whole, and no record may be reported failed, except, when
// allowCutoffs is set, a record the same invocation (by request ID) logged
// as cut off at its deadline and that another delivery of the same message
// handled (the mapping deleted it).
func checkBatches(reports []lambdaemu.BatchReport, logs []map[string]any, allowCutoffs bool) batchCheck {
	type key struct{ requestID, messageID string }
	cut := map[key]bool{}
	for _, rec := range logs {
		msg, _ := rec["message"].(string)
		req, _ := rec["requestId"].(string)
		id, _ := rec["messageId"].(string)
		if isDeadlineCutoff(msg) && req != "" && id != "" {
			cut[key{req, id}] = true
		}
	}
	deleted := map[string]bool{}
	for _, r := range reports {
		for _, id := range r.Deleted {
			deleted[id] = true
		}
	}
	var c batchCheck
	for i, r := range reports {
		if r.InvokeErr != nil || r.Response == nil || r.Response.Err != nil {
			c.errs = append(c.errs, fmt.Sprintf("batch %d failed: %v %+v", i, r.InvokeErr, r.Response))
			continue
		}
		var resp events.SQSEventResponse
		if err := json.Unmarshal(r.Response.Payload, &resp); err != nil {
			c.errs = append(c.errs, fmt.Sprintf("batch %d: response %s: %v", i, r.Response.Payload, err))
			continue
		}
		for _, f := range resp.BatchItemFailures {
			id := f.ItemIdentifier
			switch {
			case !cut[key{r.Response.RequestID, id}]:
				c.errs = append(c.errs, fmt.Sprintf("batch %d: record %s reported failed", i, id))
			case !allowCutoffs:
				c.errs = append(c.errs, fmt.Sprintf("batch %d: record %s cut off at the deadline", i, id))
			case !deleted[id]:
				c.errs = append(c.errs, fmt.Sprintf("batch %d: record %s cut off at the deadline and never handled afterwards", i, id))
			default:
				c.cutoffs = append(c.cutoffs, fmt.Sprintf("batch %d: %s", i, id))
			}
		}
	}
	return c
}

// TestCheckBatches: checkBatches accepts a record cut off at the deadline
// only when the same invocation logged the cut-off, another delivery
// handled the message, and the test allows cut-offs; every other failure
// still fails the test.
func TestCheckBatches(t *testing.T) {
	t.Parallel()
	cutoff := func(req, id string) map[string]any {
		return map[string]any{"message": "handler: message still in progress at the deadline; reported failed",
			"reason": "time budget exceeded", "requestId": req, "messageId": id}
	}
	retry := func(req, id string) map[string]any {
		return map[string]any{"message": "handler: message failed; reported for retry", "requestId": req, "messageId": id}
	}
	batch := func(req string, failedIDs []string, deleted ...string) lambdaemu.BatchReport {
		var resp events.SQSEventResponse
		for _, id := range failedIDs {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		b, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		return lambdaemu.BatchReport{Response: &lambdaemu.Response{RequestID: req, Payload: b}, Deleted: deleted}
	}
	// m1 fails in invocation r1 (which handles m2) and is handled in r2.
	failThenHandled := []lambdaemu.BatchReport{batch("r1", []string{"m1"}, "m2"), batch("r2", nil, "m1")}
	failForGood := []lambdaemu.BatchReport{batch("r1", []string{"m1"}, "m2"), batch("r2", nil, "m3")}
	whole := lambdaemu.BatchReport{Response: &lambdaemu.Response{RequestID: "r3", Err: &lambdaemu.FunctionError{Type: "Runtime.ExitError"}}}
	cases := []struct {
		name          string
		reports       []lambdaemu.BatchReport
		logs          []map[string]any
		allow         bool
		errs, cutoffs int
	}{
		{"cut off, then handled", failThenHandled, []map[string]any{cutoff("r1", "m1")}, true, 0, 1},
		{"cut off, strict", failThenHandled, []map[string]any{cutoff("r1", "m1")}, false, 1, 0},
		{"cut off, never handled", failForGood, []map[string]any{cutoff("r1", "m1")}, true, 1, 0},
		{"failed for another reason", failThenHandled, []map[string]any{retry("r1", "m1")}, true, 1, 0},
		{"cut off in another invocation", failThenHandled, []map[string]any{cutoff("r0", "m1")}, true, 1, 0},
		{"another message cut off", failThenHandled, []map[string]any{cutoff("r1", "m2")}, true, 1, 0},
		{"no log", failThenHandled, nil, true, 1, 0},
		{"batch failed as a whole", append(failThenHandled, whole), []map[string]any{cutoff("r1", "m1"), cutoff("r3", "m4")}, true, 1, 1},
		{"all handled", []lambdaemu.BatchReport{batch("r1", nil, "m1", "m2")}, nil, false, 0, 0},
	}
	for _, tc := range cases {
		c := checkBatches(tc.reports, tc.logs, tc.allow)
		if len(c.errs) != tc.errs || len(c.cutoffs) != tc.cutoffs {
			t.Errorf("%s: %d failures %q and %d cut-offs %q, want %d and %d", tc.name, len(c.errs), c.errs, len(c.cutoffs), c.cutoffs, tc.errs, tc.cutoffs)
		}
	}
}
