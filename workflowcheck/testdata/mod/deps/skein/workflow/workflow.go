// Package workflow is a stub of Skein's workflow facade for the analyzer's
// fixtures: aliases and wrappers of internal/sdk's stub, as the real one.
package workflow

import (
	"context"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
)

// Context is what a workflow function sees.
type Context = sdk.Context

// Workflow is a workflow.
type Workflow[I, O any] = sdk.Workflow[I, O]

// New defines a workflow.
func New[I, O any](name string, fn func(ctx Context, in I) (O, error)) *Workflow[I, O] {
	return sdk.New[I, O](name, fn)
}

// StepOptions tunes a step.
type StepOptions = sdk.StepOptions

// Step is a step.
type Step[I, O any] = sdk.Step[I, O]

// NewStep defines a step.
func NewStep[I, O any](name string, fn func(ctx context.Context, in I) (O, error), opts ...StepOptions) *Step[I, O] {
	return sdk.NewStep[I, O](name, fn, opts...)
}

// Future is a result to come.
type Future[T any] = sdk.Future[T]

// All waits for every future.
func All[T any](ctx Context, fs ...Future[T]) ([]T, error) { return sdk.All[T](ctx, fs...) }

// Sleep suspends the workflow for d.
func Sleep(ctx Context, d time.Duration) error { return sdk.Sleep(ctx, d) }

// NewTimer returns a future that settles after d.
func NewTimer(ctx Context, d time.Duration) Future[struct{}] { return sdk.NewTimer(ctx, d) }

// HookOptions tunes a hook.
type HookOptions = sdk.HookOptions

// Hook receives payloads.
type Hook[T any] = sdk.Hook[T]

// NewHook creates a hook.
func NewHook[T any](ctx Context, opts HookOptions) *Hook[T] { return sdk.NewHook[T](ctx, opts) }
