package sdk

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/skeinflow/skein/world"
)

// RegisterSentinel makes a sentinel error value (var ErrOutOfStock =
// errors.New("out of stock")) survive a round trip through the log: an
// error that is the sentinel, or wraps it, is recorded with the sentinel
// under name, and read back wrapping the very same value, so that
// errors.Is(err, ErrOutOfStock) holds in the workflow for a step that
// returned Fatal(fmt.Errorf("reserve %s: %w", sku, ErrOutOfStock)), and at
// the client for a run that failed with it. Without it a sentinel comes
// back as an *Error with the same message, which errors.Is does not match.
// Register each sentinel a workflow tests with errors.Is, under a name of
// its own, with the Registry of every worker and client (names identify
// sentinels in the log, as they do types for RegisterError); the same
// sentinel under the same name again is nil, as Register is for the same
// definition.
func (r *Registry) RegisterSentinel(name string, sentinel error) error {
	if sentinel == nil {
		return fmt.Errorf("workflow: RegisterSentinel(%q): %w: nil sentinel", name, world.ErrInvalid)
	}
	if !reflect.TypeOf(sentinel).Comparable() {
		return fmt.Errorf("workflow: RegisterSentinel(%q): %w: a %T is not comparable, so errors.Is cannot match it "+
			"(use a pointer, as errors.New does)", name, world.ErrInvalid, sentinel)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.codec.sentinels[name]; ok && prev == sentinel {
		return nil // registered already, as a shared setup does twice
	}
	if err := r.codec.checkErrorName("RegisterSentinel", name); err != nil {
		return err
	}
	if prev, ok := r.codec.sentinelNames[sentinel]; ok {
		return fmt.Errorf("workflow: RegisterSentinel(%q): %w: the sentinel is already registered as %q", name, world.ErrConflict, prev)
	}
	r.codec.sentinels[name] = sentinel
	r.codec.sentinelNames[sentinel] = name
	return nil
}

// checkErrorName refuses an empty error name, or one an SDK type, a
// registered type or a registered sentinel records already.
func (c *codec) checkErrorName(fn, name string) error {
	if name == "" {
		return fmt.Errorf("workflow: %s: %w: empty name", fn, world.ErrInvalid)
	}
	_, typ := c.byName[name]
	_, sentinel := c.sentinels[name]
	if typ || sentinel || sdkErrorType(name) {
		return fmt.Errorf("workflow: %s: %w: %q is already registered", fn, world.ErrConflict, name)
	}
	return nil
}

// sdkErrorType reports whether the SDK records its own errors under name.
func sdkErrorType(name string) bool {
	switch name {
	case typeFatal, typeRetryable, typeSerialization, typeHookConflict, typeHookNotFound, typeHookPayload, typeStep,
		typeRunFailed, typeRunCancelled, typeAllFailed, typeCompensation, typeStepTimeout, typeCanceled, typeDeadline:
		return true
	}
	return false
}

// sentinel returns the name err is registered under as a sentinel.
func (c *codec) sentinel(err error) (string, bool) {
	if len(c.sentinelNames) == 0 || !reflect.TypeOf(err).Comparable() {
		return "", false
	}
	name, ok := c.sentinelNames[err]
	return name, ok
}

// carriesJSON reports whether an error of pointer type t keeps anything
// when encoded as JSON: a type with a JSON or text encoding of its own, a
// pointer to a non-struct value, or to a struct with an exported field the
// encoding keeps. errors.New's and fmt.Errorf's types keep nothing.
func carriesJSON(t reflect.Type) bool {
	if t.Implements(reflect.TypeFor[json.Marshaler]()) || t.Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
		return true
	}
	e := t.Elem()
	if e.Kind() != reflect.Struct {
		return true
	}
	for _, f := range reflect.VisibleFields(e) {
		if f.IsExported() && !f.Anonymous && f.Tag.Get("json") != "-" {
			return true
		}
	}
	return false
}
