// Package sdk is a stub of Skein's SDK for the analyzer's fixtures: the
// declarations workflow code uses, with the real signatures, and no engine.
package sdk

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Context is what a workflow function sees.
type Context interface {
	Now() time.Time
	Rand() *rand.Rand
	NewID() string
	Logger() *slog.Logger
}

// Workflow is a workflow.
type Workflow[I, O any] struct{ fn func(Context, I) (O, error) }

// New defines a workflow.
func New[I, O any](name string, fn func(ctx Context, in I) (O, error)) *Workflow[I, O] {
	return &Workflow[I, O]{fn: fn}
}

// Call runs the workflow as a child run.
func (w *Workflow[I, O]) Call(ctx Context, in I) (O, error) { return w.fn(ctx, in) }

// StepOptions tunes a step.
type StepOptions struct{ MaxRetries int }

// Step is a step.
type Step[I, O any] struct {
	fn func(context.Context, I) (O, error)
}

// NewStep defines a step.
func NewStep[I, O any](name string, fn func(ctx context.Context, in I) (O, error), opts ...StepOptions) *Step[I, O] {
	return &Step[I, O]{fn: fn}
}

// Go starts the step.
func (s *Step[I, O]) Go(ctx Context, in I) Future[O] { return Future[O]{} }

// Call runs the step and waits for its result.
func (s *Step[I, O]) Call(ctx Context, in I) (O, error) { return s.Go(ctx, in).Get(ctx) }

// Future is a result to come.
type Future[T any] struct{ v T }

// Get waits for the result.
func (f Future[T]) Get(ctx Context) (T, error) { return f.v, nil }

// All waits for every future.
func All[T any](ctx Context, fs ...Future[T]) ([]T, error) { return nil, nil }

// Sleep suspends the workflow for d.
func Sleep(ctx Context, d time.Duration) error { return nil }

// NewTimer returns a future that settles after d.
func NewTimer(ctx Context, d time.Duration) Future[struct{}] { return Future[struct{}]{} }

// HookOptions tunes a hook.
type HookOptions struct{ Token string }

// Hook receives payloads.
type Hook[T any] struct{}

// NewHook creates a hook.
func NewHook[T any](ctx Context, opts HookOptions) *Hook[T] { return &Hook[T]{} }

// Receive waits for the next payload.
func (h *Hook[T]) Receive(ctx Context) (T, error) { var v T; return v, nil }
