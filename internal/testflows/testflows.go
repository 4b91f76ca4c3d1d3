// Package testflows holds the workflows the library's own tests run
// (handler, dynamoworld): a serial run of n steps, a fan-out of n steps and
// a step that writes a stream. It is a fixture, imported by _test.go files
// only (the import-boundary test in the repository root checks that), so
// that no library test depends on examples/, which only shows how Skein is
// used. The example stack's workflows (examples/lambda/demo) include
// workflows of the same names and shapes, which the end-to-end suite
// (integration/) drives through the real bootstrap.
package testflows

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinflow/skein/workflow"
)

// Registry returns a registry with every workflow and step of the package.
func Registry() (*workflow.Registry, error) {
	r := workflow.NewRegistry()
	if err := r.Register(Serial, Increment, FanOut, Square, Streamer, Emit); err != nil {
		return nil, err
	}
	return r, nil
}

// Increment adds one.
var Increment = workflow.NewStep("increment", func(_ context.Context, n int) (int, error) { return n + 1, nil })

// Serial runs n steps one after the other and returns n.
var Serial = workflow.New("serial", func(ctx workflow.Context, n int) (int, error) {
	v := 0
	for range n {
		var err error
		if v, err = Increment.Call(ctx, v); err != nil {
			return 0, err
		}
	}
	return v, nil
})

// Square squares.
var Square = workflow.NewStep("square", func(_ context.Context, n int) (int, error) { return n * n, nil })

// FanOut runs n steps at once and returns the sum of their results.
var FanOut = workflow.New("fan-out", func(ctx workflow.Context, n int) (int, error) {
	fs := make([]workflow.Future[int], n)
	for i := range n {
		fs[i] = Square.Go(ctx, i)
	}
	vs, err := workflow.All(ctx, fs...)
	if err != nil {
		return 0, err
	}
	sum := 0
	for _, v := range vs {
		sum += v
	}
	return sum, nil
})

// Emission is what Emit writes: Chunks chunks, Interval apart.
type Emission struct {
	Chunks   int           `json:"chunks"`
	Interval time.Duration `json:"interval"`
}

// Emit writes numbered chunks to the run's default stream, then closes it.
var Emit = workflow.NewStep("emit", func(ctx context.Context, e Emission) (int, error) {
	w := workflow.Writer(ctx, "")
	for i := range e.Chunks {
		if i > 0 {
			t := time.NewTimer(e.Interval)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return 0, ctx.Err()
			}
		}
		if _, err := fmt.Fprintf(w, "chunk %d", i); err != nil {
			return 0, err
		}
	}
	return e.Chunks, w.Close()
})

// Streamer runs Emit.
var Streamer = workflow.New("streamer", func(ctx workflow.Context, e Emission) (int, error) {
	return Emit.Call(ctx, e)
})
