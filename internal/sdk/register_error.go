package sdk

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
	// RegistrationUnregisteredCompensation: the step's compensation
	// (WithCompensation) is nil (Compensation is empty) or is not
	// registered in the same call or an earlier one. Matches
	// world.ErrInvalid.
	RegistrationUnregisteredCompensation = "unregistered compensation"
)

// RegistrationError is what Register (and Replace) return for a definition
// they refuse, and worker.New for a schedule it refuses; nothing of the call
// is registered then. errors.Is matches it with world.ErrConflict for a
// name another definition holds, world.ErrInvalid for any other refusal.
type RegistrationError struct {
	// Kind is "workflow", "step" or "schedule"; Name the definition's or
	// the schedule's name.
	Kind, Name string
	// Problem, for a workflow or a step, is RegistrationTaken,
	// RegistrationReserved, RegistrationInvalidName or
	// RegistrationUnregisteredCompensation. A schedule's is empty: Err
	// says what is wrong (an expression that does not parse is a
	// *schedule.ParseError, an unknown workflow or an input that does not
	// fit the workflow's input type a *RequestError).
	Problem string
	// Compensation names the step's compensation that is not registered
	// (RegistrationUnregisteredCompensation; empty for a nil one).
	Compensation string
	// Err details an invalid name or schedule (nil otherwise).
	Err error
}

func (e *RegistrationError) Error() string {
	if e.Kind == registrationSchedule {
		return fmt.Sprintf("workflow: schedule %q: %v", e.Name, e.Err)
	}
	switch e.Problem {
	case RegistrationUnregisteredCompensation:
		if e.Compensation == "" {
			return fmt.Sprintf("workflow: Register: step %q declares a nil compensation", e.Name)
		}
		return fmt.Sprintf("workflow: Register: the compensation %q of step %q is not registered "+
			"(register it with the step, in the same call or an earlier one)", e.Compensation, e.Name)
	case RegistrationTaken:
		return fmt.Sprintf("workflow: Register: %s %q is already registered by another definition (names identify workflows and steps in the log: give each its own)", e.Kind, e.Name)
	case RegistrationReserved:
		return fmt.Sprintf("workflow: Register: %s name %q is reserved: names starting with %q are the SDK's own", e.Kind, e.Name, ReservedPrefix)
	}
	return fmt.Sprintf("workflow: Register: %s name %.64q: %v", e.Kind, e.Name, e.Err)
}

// registrationSchedule is the Kind of a schedule's RegistrationError.
const registrationSchedule = "schedule"

// Unwrap returns the detail of an invalid name or schedule.
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
	case strings.TrimSpace(name) == "":
		return bad(fmt.Errorf("a name of spaces only (tools would show none)"))
	case len(name) > world.MaxNameLength:
		return bad(fmt.Errorf("the name is %d bytes, more than %d", len(name), world.MaxNameLength))
	case world.CheckText(name) != nil:
		return bad(fmt.Errorf("the name %v (names are recorded in the log as JSON text and shown by tools)", world.CheckText(name)))
	case strings.HasPrefix(name, ReservedPrefix):
		return &RegistrationError{Kind: kind, Name: name, Problem: RegistrationReserved}
	}
	return nil
}
