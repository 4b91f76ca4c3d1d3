package encrypt

import (
	"encoding/json"

	"github.com/skeinflow/skein/world"
)

// Each event type that carries a payload carries exactly one: the run's
// input or output, a step's input or result, a hook's payload.

// payloadOf returns the payload of d and the purpose it is sealed for;
// ok is false for an event type that carries none.
func payloadOf(d world.EventData) (purpose string, p json.RawMessage, ok bool) {
	switch d := d.(type) {
	case *world.RunCreated:
		return purposeRunInput, d.Input, true
	case *world.RunCompleted:
		return purposeRunOutput, d.Output, true
	case *world.StepCreated:
		return purposeStepInput, d.Input, true
	case *world.StepCompleted:
		return purposeStepOutput, d.Result, true
	case *world.HookReceived:
		return purposeHook, d.Payload, true
	}
	return "", nil, false
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
func withKey(purpose string) bool { return purpose == purposeRunInput }
