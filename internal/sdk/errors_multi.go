package sdk

import (
	"errors"

	"github.com/skeinflow/skein/world"
)

// Multi-errors in the log. An error that wraps several (errors.Join, a
// fmt.Errorf with more than one %w, any type with Unwrap() []error) is
// recorded with its members in world.ErrorData.Errors, each encoded as any
// error is, so that errors.As finds their types after the round trip.
// Logs written before members were kept hold the message only: those read
// back as an *Error, as they always did.

// encodeAll encodes the members of a multi-error.
func (c *codec) encodeAll(errs []error) []*world.ErrorData {
	var out []*world.ErrorData
	for _, err := range errs {
		if err != nil {
			out = append(out, c.encode(err))
		}
	}
	return out
}

// decodeAll decodes the members of a multi-error.
func (c *codec) decodeAll(ds []*world.ErrorData) []error {
	var out []error
	for _, d := range ds {
		if err := c.decode(d); err != nil {
			out = append(out, err)
		}
	}
	return out
}

// decodeMulti decodes an error recorded with members (ErrorData.Errors):
// an errors.Join comes back as one, with its members typed again; an
// AllFailedError as Any's error; any other (a fmt.Errorf with several %w, a
// multi-error of a type not registered) as an *Error keeping its type name
// and message whose Cause joins the members, so errors.As finds them.
func (c *codec) decodeMulti(d *world.ErrorData, cause error) error {
	members := c.decodeAll(d.Errors)
	switch d.Type {
	case typeJoin:
		return errors.Join(members...)
	case typeAllFailed:
		return &allFailedError{Errors: members}
	}
	if cause == nil {
		cause = errors.Join(members...)
	}
	return &Error{Type: d.Type, Message: d.Message, Stack: d.Stack, Code: d.Code, Details: d.Details, Cause: cause}
}
