// Package schedmsg is the schedule message: the queue body with which an
// EventBridge Scheduler schedule asks a flow function (or a Processor) to
// start a scheduled run, and the idempotency key of a firing. Package
// schedule's documentation describes the message for users.
package schedmsg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// MessageField is the one top-level field of a schedule message, the queue
// body that asks a flow function to start a scheduled run:
//
//	{"skeinSchedule": {
//	  "scheduleArn": "<aws.scheduler.schedule-arn>",
//	  "scheduledTime": "<aws.scheduler.scheduled-time>",
//	  "workflow": "report",
//	  "input": {"day": "today"}
//	}}
//
// EventBridge Scheduler fills in the two placeholders when it sends the
// message. The schedule's name is "name" when set, otherwise the last part
// of the ARN (group/name for a schedule outside the default group).
const MessageField = "skeinSchedule"

// Message is the content of a schedule message.
type Message struct {
	ScheduleARN   string          `json:"scheduleArn,omitempty"`
	Name          string          `json:"name,omitempty"`
	ScheduledTime string          `json:"scheduledTime"`
	Workflow      string          `json:"workflow"`
	Input         json.RawMessage `json:"input,omitempty"`
}

// Firing is one firing of a schedule: start Workflow with Input; Key is the
// run's idempotency key.
type Firing struct {
	Name     string
	Time     time.Time
	Workflow string
	Input    json.RawMessage
}

// Key returns the firing's idempotency key (see Key).
func (f Firing) Key() string { return Key(f.Name, f.Time) }

// MessageError reports a schedule message that cannot be acted on.
type MessageError struct{ Reason string }

// newMessageError returns a *MessageError.
func newMessageError(format string, args ...any) *MessageError {
	return &MessageError{Reason: fmt.Sprintf(format, args...)}
}

func (e *MessageError) Error() string { return "schedule: message: " + e.Reason }

// IsMessage reports whether a queue body is a schedule message: a JSON
// object with MessageField at its top level. Such a body is never a
// world.Message.
func IsMessage(body []byte) bool {
	if !bytes.Contains(body, []byte(`"`+MessageField+`"`)) {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return false
	}
	_, ok := top[MessageField]
	return ok
}

// EncodeMessage returns the queue body of m.
func EncodeMessage(m Message) ([]byte, error) {
	return json.Marshal(map[string]Message{MessageField: m})
}

// DecodeMessage parses a schedule message strictly: no other top-level
// field, no unknown field, a workflow, an RFC 3339 scheduled time and a
// name or schedule ARN. What does not fit is a *MessageError.
func DecodeMessage(body []byte) (Firing, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return Firing{}, newMessageError("%v", err)
	}
	raw, ok := top[MessageField]
	if !ok || len(top) != 1 {
		return Firing{}, newMessageError("want one top-level field, %q", MessageField)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var m Message
	if err := dec.Decode(&m); err != nil {
		return Firing{}, newMessageError("%v", err)
	}
	if m.Workflow == "" {
		return Firing{}, newMessageError("no workflow")
	}
	t, err := time.Parse(time.RFC3339, m.ScheduledTime)
	if err != nil {
		return Firing{}, newMessageError("scheduledTime %q is not an RFC 3339 time (is the placeholder <aws.scheduler.scheduled-time> filled in?)", m.ScheduledTime)
	}
	name := m.Name
	if name == "" {
		if name, err = nameFromARN(m.ScheduleARN); err != nil {
			return Firing{}, err
		}
	}
	input := m.Input
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("null")
	}
	return Firing{Name: name, Time: t.UTC(), Workflow: m.Workflow, Input: input}, nil
}

// nameFromARN returns the schedule name of an EventBridge Scheduler ARN,
// arn:<partition>:scheduler:<region>:<account>:schedule/<group>/<name>: the
// name, prefixed with its group outside the default group.
func nameFromARN(arn string) (string, error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "scheduler" {
		return "", newMessageError("no name, and scheduleArn %q is not a schedule ARN (is the placeholder <aws.scheduler.schedule-arn> filled in?)", arn)
	}
	res := strings.Split(parts[5], "/")
	if len(res) != 3 || res[0] != "schedule" || res[1] == "" || res[2] == "" {
		return "", newMessageError("scheduleArn %q: want a resource schedule/<group>/<name>", arn)
	}
	if res[1] == "default" {
		return res[2], nil
	}
	return res[1] + "/" + res[2], nil
}
