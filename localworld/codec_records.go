package localworld

import (
	"bytes"
	"encoding/json"

	"github.com/skeinflow/skein/world"
)

// eventTypes are the event types a binary event names by number (i+1;
// 0: the type's name follows). Part of the format: append, never reorder.
var eventTypes = [...]world.EventType{
	world.EventRunCreated, world.EventRunStarted, world.EventRunCompleted, world.EventRunFailed,
	world.EventRunCancelled, world.EventRunHeld, world.EventStepCreated, world.EventStepStarted,
	world.EventStepCompleted, world.EventStepFailed, world.EventStepRetrying, world.EventHookCreated,
	world.EventHookConflict, world.EventHookReceived, world.EventHookDisposed, world.EventWaitCreated,
	world.EventWaitCompleted, world.EventAttributeSet, world.EventCompStarted, world.EventCompRetryScheduled,
	world.EventCompSucceeded, world.EventCompFailed, world.EventRunDeactivated, world.EventRunCleanedUp,
}

// appendBinary appends v's binary record to b; errNotBinary when v is not
// a record the binary form holds (or not exactly). e's buffer is scratch.
func appendBinary(b []byte, v any, e *encoder) ([]byte, error) {
	var w binWriter
	switch x := v.(type) {
	case *storedEvent:
		w.b = append(b, codecV1)
		writeEvent(&w, x, e)
	case *world.Step:
		w.b = append(b, codecV1)
		writeStep(&w, x, &e.buf)
	case *world.Run:
		w.b = append(b, codecV1)
		writeRun(&w, x, &e.buf)
	default:
		return b, errNotBinary
	}
	if w.err != nil {
		return b, w.err
	}
	return w.b, nil
}

// decodeBinary decodes the binary record v into out.
func decodeBinary(v []byte, out any) error {
	r := binReader{b: v[1:]}
	var err error
	switch x := out.(type) {
	case *world.Event:
		err = readEvent(&r, x)
	case *world.Step:
		readStep(&r, x)
	case *world.Run:
		readRun(&r, x)
	default:
		r.fail("a record of a kind stored as JSON")
	}
	if err != nil {
		return err
	}
	return r.end()
}

func writeEvent(w *binWriter, ev *storedEvent, e *encoder) {
	w.id(ev.RunID)
	w.varint(ev.Seq)
	w.id(ev.EventID)
	w.id(ev.CorrelationID)
	w.time(ev.CreatedAt)
	w.b = append(w.b, eventTypeCode(ev.EventType))
	if eventTypeCode(ev.EventType) == 0 {
		w.str(string(ev.EventType))
	}
	if ev.EventData == nil {
		return
	}
	e.buf.Reset()
	if err := e.enc.Encode(ev.EventData); err != nil {
		w.err = errNotBinary
		return
	}
	data := e.buf.Bytes()
	w.b = append(w.b, data[:len(data)-1]...) // the rest of the record; Encode ends with a newline
}

func eventTypeCode(t world.EventType) byte {
	for i, et := range eventTypes {
		if et == t {
			return byte(i + 1)
		}
	}
	return 0
}

// readEvent reads an event as world.Event's UnmarshalJSON does: its data
// of the type's payload, empty when the record has none.
func readEvent(r *binReader, ev *world.Event) error {
	ev.RunID = r.id()
	ev.Seq = r.varint()
	ev.EventID = r.id()
	ev.CorrelationID = r.id()
	ev.CreatedAt = r.time()
	var t world.EventType
	switch code := r.byte(); {
	case code == 0:
		t = world.EventType(r.str())
	case int(code) <= len(eventTypes):
		t = eventTypes[code-1]
	default:
		r.fail("an event type")
	}
	if r.bad != "" {
		return nil
	}
	data, err := world.NewEventData(t)
	if err != nil {
		return err
	}
	if len(r.b) > 0 && string(r.b) != "null" {
		if err := json.Unmarshal(r.b, data); err != nil {
			r.fail("the event's data")
			return nil
		}
	}
	r.b = r.b[len(r.b):]
	ev.Data = data
	return nil
}

func writeStep(w *binWriter, st *world.Step, scratch *bytes.Buffer) {
	w.id(st.RunID)
	w.id(st.StepID)
	w.str(st.StepName)
	w.str(string(st.Status))
	w.raw(st.Input, scratch)
	w.raw(st.Output, scratch)
	w.json(st.Error, st.Error == nil)
	w.varint(int64(st.Attempt))
	w.time(st.RetryAfter)
	w.time(st.LeaseExpiresAt)
	w.time(st.CreatedAt)
	w.time(st.UpdatedAt)
	w.time(st.StartedAt)
	w.time(st.CompletedAt)
	w.varint(int64(st.Interrupted))
	w.json(st.Compensation, st.Compensation == nil)
}

func readStep(r *binReader, st *world.Step) {
	*st = world.Step{
		RunID: r.id(), StepID: r.id(), StepName: r.str(), Status: world.StepStatus(r.str()),
		Input: r.raw(), Output: r.raw(),
	}
	if e := new(world.ErrorData); r.json(e) {
		st.Error = e
	}
	st.Attempt = r.int()
	st.RetryAfter, st.LeaseExpiresAt = r.time(), r.time()
	st.CreatedAt, st.UpdatedAt, st.StartedAt, st.CompletedAt = r.time(), r.time(), r.time(), r.time()
	st.Interrupted = r.int()
	if c := new(world.StepCompensation); r.json(c) {
		st.Compensation = c
	}
}

func writeRun(w *binWriter, run *world.Run, scratch *bytes.Buffer) {
	w.id(run.RunID)
	w.str(run.WorkflowName)
	w.str(run.DeploymentID)
	w.str(string(run.Status))
	w.raw(run.Input, scratch)
	w.raw(run.Output, scratch)
	w.json(run.Error, run.Error == nil)
	w.str(run.ErrorCode)
	w.str(run.CancelReason)
	w.raw(run.ExecutionContext, scratch)
	w.json(run.Attributes, len(run.Attributes) == 0)
	w.str(run.IdempotencyKey)
	w.str(run.Version)
	w.json(run.Hold, run.Hold == nil)
	w.varint(run.LastSeq)
	w.varint(run.PayloadBytes)
	w.time(run.CreatedAt)
	w.time(run.UpdatedAt)
	w.time(run.StartedAt)
	w.time(run.CompletedAt)
	w.time(run.DeactivatedAt)
	w.str(run.Cleanup)
	w.bool(run.Compensate)
	w.json(run.Compensations, run.Compensations == world.Compensations{})
}

func readRun(r *binReader, run *world.Run) {
	*run = world.Run{
		RunID: r.id(), WorkflowName: r.str(), DeploymentID: r.str(), Status: world.RunStatus(r.str()),
		Input: r.raw(), Output: r.raw(),
	}
	if e := new(world.ErrorData); r.json(e) {
		run.Error = e
	}
	run.ErrorCode, run.CancelReason = r.str(), r.str()
	run.ExecutionContext = r.raw()
	r.json(&run.Attributes)
	run.IdempotencyKey, run.Version = r.str(), r.str()
	if h := new(world.RunHold); r.json(h) {
		run.Hold = h
	}
	run.LastSeq, run.PayloadBytes = r.varint(), r.varint()
	run.CreatedAt, run.UpdatedAt, run.StartedAt, run.CompletedAt = r.time(), r.time(), r.time(), r.time()
	run.DeactivatedAt = r.time()
	run.Cleanup = r.str()
	run.Compensate = r.bool()
	r.json(&run.Compensations)
}
