package lambdaemu

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Settlement is what the event source mapping does with a batch after the invocation.
type Settlement struct {
	// Delete lists the message IDs to delete, in batch order. The others come back after the
	// queue's visibility timeout (and eventually reach the dead-letter queue).
	Delete []string
	// BatchFailed is set when nothing is deleted because the batch failed as a whole: a function
	// error, or a partial-batch response Lambda does not accept.
	BatchFailed bool
	// Reason explains the decision (for logs and test failures).
	Reason string
}

// Settle applies Lambda's rules for an SQS batch (see the package doc, Settling a batch). ids are the batch's
// message IDs; payload is the function's response; fnErr is non-nil for a function error (an error
// response, a panic, a crash or a timeout).
//
//   - Function error: delete nothing.
//   - Success without ReportBatchItemFailures: delete the whole batch, whatever the payload.
//   - Success with ReportBatchItemFailures: an empty or null response, or an empty or null
//     batchItemFailures, deletes the whole batch. A response that is not a JSON object, a
//     batchItemFailures that is not a list, or an entry whose itemIdentifier is missing, null, not a
//     string, empty or not a message of the batch, fails the whole batch. Otherwise every message
//     not listed is deleted.
func Settle(ids []string, reportBatchItemFailures bool, payload []byte, fnErr error) Settlement {
	if fnErr != nil {
		return Settlement{BatchFailed: true, Reason: "function error: " + fnErr.Error()}
	}
	all := Settlement{Delete: append([]string(nil), ids...)}
	if !reportBatchItemFailures {
		all.Reason = "success (no ReportBatchItemFailures): delete the batch"
		return all
	}
	failed := func(format string, args ...any) Settlement {
		return Settlement{BatchFailed: true, Reason: "whole batch failed: " + fmt.Sprintf(format, args...)}
	}
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		all.Reason = "success with an empty or null response: delete the batch"
		return all
	}
	var resp map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &resp); err != nil {
		return failed("the response is not a JSON object: %v", err)
	}
	rawFailures, ok := resp["batchItemFailures"]
	if !ok || bytes.Equal(bytes.TrimSpace(rawFailures), []byte("null")) {
		all.Reason = "success with no batchItemFailures: delete the batch"
		return all
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(rawFailures, &entries); err != nil {
		return failed("batchItemFailures is not a list: %v", err)
	}
	if len(entries) == 0 {
		all.Reason = "success with an empty batchItemFailures: delete the batch"
		return all
	}
	inBatch := make(map[string]bool, len(ids))
	for _, id := range ids {
		inBatch[id] = true
	}
	listed := map[string]bool{}
	for i, raw := range entries {
		var entry map[string]json.RawMessage
		if err := json.Unmarshal(raw, &entry); err != nil || entry == nil {
			return failed("batchItemFailures[%d] is not an object", i)
		}
		rawID, ok := entry["itemIdentifier"]
		if !ok {
			return failed("batchItemFailures[%d] has no itemIdentifier", i)
		}
		var id *string
		if err := json.Unmarshal(rawID, &id); err != nil {
			return failed("batchItemFailures[%d].itemIdentifier is not a string", i)
		}
		switch {
		case id == nil:
			return failed("batchItemFailures[%d].itemIdentifier is null", i)
		case *id == "":
			return failed("batchItemFailures[%d].itemIdentifier is empty", i)
		case !inBatch[*id]:
			return failed("batchItemFailures[%d].itemIdentifier %q is not in the batch", i, *id)
		}
		listed[*id] = true
	}
	out := Settlement{}
	for _, id := range ids {
		if !listed[id] {
			out.Delete = append(out.Delete, id)
		}
	}
	out.Reason = fmt.Sprintf("partial batch response: %d of %d failed, delete the rest", len(listed), len(ids))
	return out
}
