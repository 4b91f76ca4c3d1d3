package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/skeinflow/skein/internal/engine"
)

// DefaultMaxRetries is a step's retry budget unless StepOptions says
// otherwise: 4 attempts in all.
const DefaultMaxRetries = 3

// NoRetries, as StepOptions.MaxRetries, runs a step once.
const NoRetries = -1

// StepOptions tunes a step's retries.
type StepOptions struct {
	// MaxRetries is the number of retries after the first attempt
	// (default DefaultMaxRetries; NoRetries for none).
	MaxRetries int
	// Backoff returns the delay before retry n (1-based). The default is
	// exponential from 1s, doubling up to 5 minutes, with ±20% jitter. A
	// step returning RetryAfter or RetryAt overrides it.
	Backoff func(retry int) time.Duration
	// Timeout, when positive, bounds each attempt: when it passes, the
	// step's context is cancelled and the attempt fails with a timeout
	// error (code STEP_TIMEOUT; errors.Is context.DeadlineExceeded),
	// retried like any failure, whatever the function returns
	// afterwards: a result returned after
	// the deadline is discarded (an error becomes the timeout's cause), and
	// a function that does not return within a second of it is left running
	// on its own, so steps should watch their context. Zero means no
	// timeout; negative is refused by Registry.Register.
	Timeout time.Duration
}

// ExponentialBackoff returns a backoff starting at initial, doubling per
// retry up to limit, with ±20% jitter.
func ExponentialBackoff(initial, limit time.Duration) func(retry int) time.Duration {
	return engine.ExponentialBackoff(initial, limit)
}

// Step is a step: an ordinary function that runs once per attempt, whose
// result is recorded. Steps are where side effects belong.
type Step[I, O any] struct {
	name string
	fn   func(context.Context, I) (O, error)
	opts StepOptions
	// comp is the step's undo (WithCompensation); hasComp tells a nil
	// compensation declared from none.
	comp    Definition
	hasComp bool
}

// NewStep defines a step. Register it with a Registry before running it.
func NewStep[I, O any](name string, fn func(ctx context.Context, in I) (O, error), opts ...StepOptions) *Step[I, O] {
	s := &Step[I, O]{name: name, fn: fn}
	if len(opts) > 0 {
		s.opts = opts[0]
	}
	return s
}

// Name returns the step's name.
func (s *Step[I, O]) Name() string { return s.name }

// OptionsOf returns the options s was defined with.
func OptionsOf[I, O any](s *Step[I, O]) StepOptions { return s.opts }

// Go starts the step and returns its future. The step is created when the
// workflow next waits; arguments that do not serialize give a future that
// fails with a *SerializationError.
func (s *Step[I, O]) Go(ctx Context, in I) Future[O] {
	c := ctx.impl()
	if err := checkStepName(s.name); err != nil {
		return failed[O](err)
	}
	if err := c.reg.checkCalled(s); err != nil {
		return failed[O](err)
	}
	b, err := json.Marshal(in)
	if err != nil {
		return failed[O](&SerializationError{What: fmt.Sprintf("arguments of step %q", s.name), Err: err})
	}
	var f *engine.Future
	if comp := s.compName(); comp != "" {
		f = c.ec.StepWithCompensation(s.name, b, comp)
	} else {
		f = c.ec.Step(s.name, b)
	}
	p := &stepPromise{f: f, name: s.name, reg: c.reg}
	s.track(c, p)
	return Future[O]{p: p}
}

// checkStepName refuses a call of a step whose name the log cannot record
// (or that Register refuses): the call fails, and the run with it when the
// workflow returns the error, where recording it would be refused.
func checkStepName(name string) error {
	err := checkName("step", name)
	if err == nil {
		return nil
	}
	var re *RegistrationError
	if errors.As(err, &re) && re.Err != nil {
		err = re.Err
	} else {
		err = fmt.Errorf("names starting with %q are reserved for the SDK's own steps", ReservedPrefix)
	}
	return fmt.Errorf("workflow: step %.64q cannot be called: %w", name, err)
}

// Call runs the step and waits for its result. A step that failed for good
// returns a *StepError wrapping what the step returned.
func (s *Step[I, O]) Call(ctx Context, in I) (O, error) {
	return s.Go(ctx, in).Get(ctx)
}

func (s *Step[I, O]) register(r *Registry) error {
	maxRetries := s.opts.MaxRetries
	switch {
	case maxRetries == 0:
		maxRetries = DefaultMaxRetries
	case maxRetries < 0:
		maxRetries = 0
	}
	if s.opts.Timeout < 0 {
		return fmt.Errorf("workflow: step %q: negative StepOptions.Timeout %s", s.name, s.opts.Timeout)
	}
	return r.addStep(&engine.Step{
		Name:       s.name,
		MaxRetries: maxRetries,
		Backoff:    s.opts.Backoff,
		Timeout:    s.opts.Timeout,
		Fn: func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
			now := time.Now
			if info, ok := engine.StepInfoFrom(ctx); ok && info.Now != nil {
				now = info.Now
			}
			var in I
			if err := unmarshal(raw, &in); err != nil {
				return nil, r.failure(&SerializationError{What: fmt.Sprintf("arguments of step %q", s.name), Decode: true, Err: err}, now())
			}
			out, err := s.fn(ctx, in)
			if err != nil {
				return nil, r.failure(err, now())
			}
			b, err := json.Marshal(out)
			if err != nil {
				return nil, r.failure(&SerializationError{What: fmt.Sprintf("return value of step %q", s.name), Err: err}, now())
			}
			return b, nil
		},
	})
}

func (r *Registry) failure(err error, now time.Time) *engine.Failure {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.codec.failure(err, now)
}

// unmarshal decodes raw into v; empty input leaves v zero.
func unmarshal(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, v)
}
