package sdk

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/world"
)

// Definition is a workflow or a step to register: *Workflow and *Step.
type Definition interface {
	// Name returns the name the definition is registered and recorded under.
	Name() string
	register(r *Registry) error
}

// Registry holds the workflows, steps and error types a worker can run,
// registered explicitly by name. It is safe for concurrent use.
type Registry struct {
	mu        sync.RWMutex
	workflows map[string]*engine.Workflow
	steps     map[string]*engine.Step
	defs      map[string]Definition // by kind and name: what Register was given
	firsts    map[string]Definition // by kind and name: what Register was first given (Replace keeps it)
	// inputs decode a workflow's input into its input type, by workflow
	// name: StartJSON checks an input before it creates a run.
	inputs map[string]func(json.RawMessage, bool) error
	codec  codec
}

// NewRegistry returns a registry holding the SDK's built-in steps.
func NewRegistry() *Registry {
	r := &Registry{
		workflows: make(map[string]*engine.Workflow),
		steps:     make(map[string]*engine.Step),
		defs:      make(map[string]Definition),
		inputs:    make(map[string]func(json.RawMessage, bool) error),
		firsts:    make(map[string]Definition),
		codec:     newCodec(),
	}
	r.steps[startChildStep] = r.startChildStep()
	return r
}

// Register adds workflows and steps. Registering the very same definition
// value again (in this call or an earlier one, say a step shared by two
// packages' setup) does nothing. A different definition under a name
// already registered for the same kind is refused whatever the types of
// its input and output, as is a name the log cannot record or one starting
// with ReservedPrefix: the error is a *RegistrationError, and nothing of
// the call is registered then. A nil definition (a nil *Step or *Workflow
// included) is refused with an error matching world.ErrInvalid.
func (r *Registry) Register(defs ...Definition) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[string]Definition)
	var add []Definition
	for i, d := range defs {
		if err := checkNil("Register", i, d); err != nil {
			return err
		}
		// A name is a definition's identity in the log: one workflow and
		// one step per name, whatever their type parameters.
		kind := "step"
		if _, ok := d.(interface{ isWorkflow() }); ok {
			kind = "workflow"
		}
		if err := checkName(kind, d.Name()); err != nil {
			return err
		}
		key := kind + "/" + d.Name()
		if seen[key] == d || r.defs[key] == d {
			continue // the same definition again
		}
		_, wfTaken := r.workflows[d.Name()]
		_, stepTaken := r.steps[d.Name()]
		if seen[key] != nil || (kind == "workflow" && wfTaken) || (kind == "step" && stepTaken) {
			return &RegistrationError{Kind: kind, Name: d.Name(), Problem: RegistrationTaken}
		}
		seen[key] = d
		add = append(add, d)
	}
	if err := r.checkCompensations(defs); err != nil {
		return err
	}
	for _, d := range add {
		if err := d.register(r); err != nil {
			return err
		}
	}
	for key, d := range seen {
		r.defs[key] = d
		if r.firsts[key] == nil {
			r.firsts[key] = d
		}
	}
	return nil
}

// checkNil refuses definition i of a call of fn when it is nil, or a nil
// *Workflow or *Step (a package-level definition used before it is set):
// the error matches world.ErrInvalid.
func checkNil(fn string, i int, d Definition) error {
	if d == nil {
		return fmt.Errorf("workflow: %s: %w: definition %d is nil", fn, world.ErrInvalid, i+1)
	}
	if v := reflect.ValueOf(d); v.Kind() == reflect.Pointer && v.IsNil() {
		// %T names this package; users know the type by its facade's name
		typ := strings.Replace(fmt.Sprintf("%T", d), "sdk.", "workflow.", 1)
		return fmt.Errorf("workflow: %s: %w: definition %d is a nil %s (used before it was assigned?)", fn, world.ErrInvalid, i+1, typ)
	}
	return nil
}

// CloneRegistry returns a registry of its own holding what r holds: the same
// workflows, steps, error types and sentinels. Registering or replacing in one leaves
// the other as it is, so a test can swap a step's implementation in a clone
// (see Replace) without touching the registry other tests share.
func CloneRegistry(r *Registry) *Registry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c := NewRegistry()
	for name, t := range r.codec.byName {
		c.codec.byName[name] = t
	}
	for t, name := range r.codec.byType {
		c.codec.byType[t] = name
	}
	for name, s := range r.codec.sentinels {
		c.codec.sentinels[name] = s
		c.codec.sentinelNames[s] = name
	}
	for key, d := range r.defs {
		// The definitions registered in r before; they register again.
		_ = d.register(c)
		c.defs[key] = d
	}
	for key, d := range r.firsts {
		c.firsts[key] = d
	}
	return c
}

// Replace puts each definition in the place of the registered workflow or
// step of the same name and kind, for a test double: a step that calls a
// fake payment gateway in place of the real one, say (package skeintest's
// StubStep does it in a Clone). The name stays what the log records, so runs
// replay against the replacement. A name not registered for that kind is an
// error, and nothing of the call is replaced then.
func Replace(r *Registry, defs ...Definition) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, len(defs))
	for i, d := range defs {
		if err := checkNil("Replace", i, d); err != nil {
			return err
		}
		keys[i] = defKey(d)
		if r.defs[keys[i]] == nil {
			kind, name, _ := strings.Cut(keys[i], "/")
			return fmt.Errorf("workflow: Replace: %s %q is not registered", kind, name)
		}
	}
	if err := r.checkCompensations(defs); err != nil {
		return err
	}
	for i, d := range defs {
		if err := d.register(r); err != nil {
			return err
		}
		r.defs[keys[i]] = d
	}
	return nil
}

// checkCalled refuses a call of step s when another definition is
// registered under its name: the registered function would run in its
// place (its replacement, by Replace, is the one meant to).
func (r *Registry) checkCalled(s Definition) error {
	key := defKey(s)
	r.mu.RLock()
	cur, first := r.defs[key], r.firsts[key]
	r.mu.RUnlock()
	if cur == nil || cur == s || first == s {
		return nil
	}
	return fmt.Errorf("workflow: step %q called is not the step registered under that name: another workflow.NewStep "+
		"with the same name is registered, and its function would run in this one's place (register the step called, "+
		"or call the registered value; names identify steps in the log)", s.Name())
}

// defKey is the key of a definition in Registry.defs: its kind and name.
func defKey(d Definition) string {
	if _, ok := d.(interface{ isWorkflow() }); ok {
		return "workflow/" + d.Name()
	}
	return "step/" + d.Name()
}

// MustRegister is Register that panics on error, for package-level setup.
func (r *Registry) MustRegister(defs ...Definition) *Registry {
	if err := r.Register(defs...); err != nil {
		panic(err)
	}
	return r
}

// RegisterError makes an error type survive a round trip through the log:
// an error of prototype's type (a pointer to a JSON-encodable struct) is
// recorded under name with its JSON, and read back as that type. A type
// whose JSON keeps nothing (no exported field, as errors.New's and
// fmt.Errorf's types) is refused: every error of that type would be read
// back empty. For a sentinel value (errors.New) use RegisterSentinel. The
// errors match world.ErrInvalid for a refused prototype or name,
// world.ErrConflict for a name already registered (registering the same
// type under the same name again is nil, as Register is for the same
// definition).
func (r *Registry) RegisterError(name string, prototype error) error {
	t := reflect.TypeOf(prototype)
	if t == nil || t.Kind() != reflect.Pointer {
		return fmt.Errorf("workflow: RegisterError(%q): %w: the prototype must be a pointer type, not %v", name, world.ErrInvalid, t)
	}
	if !carriesJSON(t) {
		return fmt.Errorf("workflow: RegisterError(%q): %w: %v has no exported field, so its errors would be recorded "+
			"without their message and read back empty (errors.New's and fmt.Errorf's included); "+
			"register a sentinel value with RegisterSentinel", name, world.ErrInvalid, t)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.codec.byType[t] == name && r.codec.byName[name] == t {
		return nil // registered already, as a shared setup does twice
	}
	if err := r.codec.checkErrorName("RegisterError", name); err != nil {
		return err
	}
	if prev, ok := r.codec.byType[t]; ok {
		return fmt.Errorf("workflow: RegisterError(%q): %w: %v is already registered as %q", name, world.ErrConflict, t, prev)
	}
	r.codec.byName[name] = t
	r.codec.byType[t] = name
	return nil
}

func (r *Registry) encode(err error) *world.ErrorData {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.codec.encode(err)
}

func (r *Registry) decode(d *world.ErrorData) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.codec.decode(d)
}

func (r *Registry) addWorkflow(w *engine.Workflow, checkInput func(json.RawMessage, bool) error) error {
	r.workflows[w.Name] = w
	r.inputs[w.Name] = checkInput
	return nil
}

// checkInput decodes input as the named workflow's input type, as a run of
// it would (strictly: see StrictInput): ok is false for a workflow the
// registry does not hold.
func (r *Registry) checkInput(name string, input json.RawMessage, strict bool) (ok bool, err error) {
	r.mu.RLock()
	check, ok := r.inputs[name]
	r.mu.RUnlock()
	if !ok {
		return false, nil
	}
	return true, check(input, strict)
}

// compensatesOnFailure reports whether the registry holds the named
// workflow, defined WithCompensateOnFailure.
func (r *Registry) compensatesOnFailure(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	w := r.workflows[name]
	return w != nil && w.CompensateOnFailure
}

func (r *Registry) addStep(s *engine.Step) error {
	r.steps[s.Name] = s
	return nil
}

// Workflows returns the workflow names r holds.
func Workflows(r *Registry) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.workflows))
	for name := range r.workflows {
		out = append(out, name)
	}
	return out
}

// engineRegistry adapts a Registry to the engine.
type engineRegistry struct{ r *Registry }

func (e engineRegistry) Workflow(name string) (*engine.Workflow, bool) {
	e.r.mu.RLock()
	defer e.r.mu.RUnlock()
	w, ok := e.r.workflows[name]
	return w, ok
}

func (e engineRegistry) Step(name string) (*engine.Step, bool) {
	e.r.mu.RLock()
	defer e.r.mu.RUnlock()
	s, ok := e.r.steps[name]
	return s, ok
}
