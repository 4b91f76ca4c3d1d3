package workflow

import (
	"fmt"
	"strings"

	"github.com/skeinflow/skein/world"
)

// ReservedPrefix starts the names of the SDK's own workflows and steps
// (the step that starts a child run is "skein.start-child"): Register
// refuses a definition whose name starts with it.
const ReservedPrefix = "skein."

// Why Register refused a definition (RegistrationError.Problem).
const (
	// RegistrationTaken: another definition of the same kind is
	// registered under the name. Matches world.ErrConflict.
	RegistrationTaken = "taken"
	// RegistrationReserved: the name starts with ReservedPrefix. Matches
	// world.ErrInvalid.
	RegistrationReserved = "reserved"
	// RegistrationInvalidName: the name is empty, too long, or not text
	// the log can record. Matches world.ErrInvalid.
	RegistrationInvalidName = "invalid name"
)

// RegistrationError is what Register returns for a definition it refuses;
// nothing of the call is registered then. errors.Is matches it with
// world.ErrConflict for a name another definition holds, world.ErrInvalid
// for a reserved or malformed name.
type RegistrationError struct {
	// Kind is "workflow" or "step"; Name the definition's name.
	Kind, Name string
	// Problem is RegistrationTaken, RegistrationReserved or
	// RegistrationInvalidName.
	Problem string
	// Err details an invalid name (nil otherwise).
	Err error
}

func (e *RegistrationError) Error() string {
	switch e.Problem {
	case RegistrationTaken:
		return fmt.Sprintf("workflow: Register: %s %q is already registered by another definition (names identify workflows and steps in the log: give each its own)", e.Kind, e.Name)
	case RegistrationReserved:
		return fmt.Sprintf("workflow: Register: %s name %q is reserved: names starting with %q are the SDK's own", e.Kind, e.Name, ReservedPrefix)
	}
	return fmt.Sprintf("workflow: Register: %s name %.64q: %v", e.Kind, e.Name, e.Err)
}

// Unwrap returns the detail of an invalid name.
func (e *RegistrationError) Unwrap() error { return e.Err }

// Is matches world.ErrConflict for a taken name, world.ErrInvalid for any
// other refusal.
func (e *RegistrationError) Is(target error) bool {
	if e.Problem == RegistrationTaken {
		return target == world.ErrConflict
	}
	return target == world.ErrInvalid
}

// checkName refuses a name the log cannot record, or one the SDK keeps for
// its own definitions.
func checkName(kind, name string) error {
	bad := func(err error) error {
		return &RegistrationError{Kind: kind, Name: name, Problem: RegistrationInvalidName, Err: err}
	}
	switch {
	case name == "":
		return bad(fmt.Errorf("empty name"))
	case len(name) > world.MaxNameLength:
		return bad(fmt.Errorf("the name is %d bytes, more than %d", len(name), world.MaxNameLength))
	case world.CheckText(name) != nil:
		return bad(fmt.Errorf("the name %v (names are recorded in the log as JSON text and shown by tools)", world.CheckText(name)))
	case strings.HasPrefix(name, ReservedPrefix):
		return &RegistrationError{Kind: kind, Name: name, Problem: RegistrationReserved}
	}
	return nil
}
