// Package cfgerr types the errors of refused configurations: every
// constructor of Skein's public packages (worker.New, client.New, the
// handler's, localworld.Open, dynamoworld.New) returns its refusal of a
// Config through Invalid, so that errors.Is(err, world.ErrInvalid) holds
// and the message stays the constructor's own.
package cfgerr

import "github.com/skeinflow/skein/world"

// Invalid returns err marked as matching world.ErrInvalid (nil for nil).
func Invalid(err error) error {
	if err == nil {
		return nil
	}
	return invalid{err}
}

type invalid struct{ err error }

func (e invalid) Error() string        { return e.err.Error() }
func (e invalid) Unwrap() error        { return e.err }
func (e invalid) Is(target error) bool { return target == world.ErrInvalid }
