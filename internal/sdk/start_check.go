package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/skeinflow/skein/internal/sealmark"
	"github.com/skeinflow/skein/world"
)

// existingRun returns the run that the start's idempotency key already
// started, provided this start repeats it: the same workflow and, unless
// o.anyInput, the same input.
func (c *Client) existingRun(ctx context.Context, runID, name string, input json.RawMessage, o startOptions) (*world.Run, error) {
	run, err := c.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		return nil, err
	}
	conflict := &RequestError{Kind: world.ErrConflict, Key: o.key, RunID: run.RunID, Workflow: run.WorkflowName, Requested: name}
	if run.WorkflowName != name {
		return nil, conflict
	}
	if o.anyInput {
		return run, nil
	}
	if kid, sealed := sealmark.KeyID(run.Input); sealed {
		return nil, &sealmark.KeylessError{KeyID: kid, RunID: run.RunID,
			Read: "the run's input is encrypted, and this client's World has no key to open it: the start's input cannot be compared with it"}
	}
	if !sameJSON(run.Input, input) {
		conflict.InputDiffers = true
		return nil, conflict
	}
	return run, nil
}

// sameJSON reports whether a and b are the same JSON value, whatever their
// spacing and the order of object members; empty is null.
func sameJSON(a, b json.RawMessage) bool {
	va, erra := decodeJSON(a)
	vb, errb := decodeJSON(b)
	if erra != nil || errb != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	return reflect.DeepEqual(va, vb)
}

func decodeJSON(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // numbers compare as written, not rounded to float64
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// checkStart refuses, before a run is created, a workflow name the
// client's Registry does not hold and an input (JSON) that does not decode
// into the input type of the workflow it holds, as a run of it would
// decode it. A client without a Registry, or a start that says
// StartUnregistered, checks neither.
// checkStrict decodes a start's input into v, a pointer to the workflow's
// input type, as StrictInput says.
func checkStrict(raw json.RawMessage, v any) error {
	t := reflect.TypeOf(v).Elem()
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		if t.Kind() == reflect.Struct && t.NumField() > 0 {
			return fmt.Errorf("no input, and the workflow takes a %s: give its fields ({} for its zero value)", t)
		}
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the input's JSON value")
	}
	return nil
}

func (c *Client) checkStart(name string, input json.RawMessage, o startOptions) error {
	if !c.known || o.unregistered || name == "" {
		return nil
	}
	ok, err := c.reg.checkInput(name, input, o.strict)
	if !ok {
		return &RequestError{Kind: ErrUnknownWorkflow, Workflow: name}
	}
	if err != nil {
		return &RequestError{Kind: world.ErrInvalid, Workflow: name, Err: err}
	}
	return nil
}
