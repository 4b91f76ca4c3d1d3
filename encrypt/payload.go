package encrypt

import (
	"encoding/json"

	"github.com/skeinflow/skein/world"
)

// Each event type that carries a payload carries exactly one: the run's
// input or output, a step's input or result, a hook's payload.

// payloadOf returns the payload of d, an event with correlation ID corr,
// and the place it is sealed for; ok is false for an event type that
// carries none.
func payloadOf(corr string, d world.EventData) (p place, b json.RawMessage, ok bool) {
	switch d := d.(type) {
	case *world.RunCreated:
		return place{field: fieldRunInput}, d.Input, true
	case *world.RunCompleted:
		return place{field: fieldRunOutput}, d.Output, true
	case *world.StepCreated:
		return place{field: fieldStepInput, entity: corr}, d.Input, true
	case *world.StepCompleted:
		return place{field: fieldStepOutput, entity: corr}, d.Result, true
	case *world.HookReceived:
		return place{field: fieldHook, entity: corr}, d.Payload, true
	}
	return place{}, nil, false
}

// withPayload returns a copy of d with its payload p (d unchanged when its
// type carries none).
func withPayload(d world.EventData, p json.RawMessage) world.EventData {
	switch d := d.(type) {
	case *world.RunCreated:
		c := *d
		c.Input = p
		return &c
	case *world.RunCompleted:
		c := *d
		c.Output = p
		return &c
	case *world.StepCreated:
		c := *d
		c.Input = p
		return &c
	case *world.StepCompleted:
		c := *d
		c.Result = p
		return &c
	case *world.HookReceived:
		c := *d
		c.Payload = p
		return &c
	}
	return d
}

// withKey says whether a payload's envelope carries the run's wrapped data
// key: the run's input does, as the one payload every run has.
func withKey(p place) bool { return p.field == fieldRunInput }
