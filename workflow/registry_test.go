package workflow_test

import (
	"context"
	"strings"
	"testing"

	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// Register refuses what the log could not record or hold twice, and
// registers nothing of a refused call.
func TestRegisterRefuses(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, int) (int, error) { return 0, nil }
	long := strings.Repeat("n", world.MaxNameLength+1)
	for _, tc := range []struct {
		name string
		defs []workflow.Definition
		want string
	}{
		{"empty name", []workflow.Definition{workflow.NewStep("", noop)}, "empty name"},
		{"long step name", []workflow.Definition{workflow.NewStep(long, noop)}, "more than 256"},
		{"long workflow name", []workflow.Definition{workflow.New(long, func(workflow.Context, int) (int, error) { return 0, nil })}, "more than 256"},
		{"a step twice", []workflow.Definition{workflow.NewStep("s", noop), workflow.NewStep("s", noop)}, "already registered"},
		{"a step twice with other types", []workflow.Definition{workflow.NewStep("s", noop), workflow.NewStep("s", func(context.Context, string) (bool, error) { return false, nil })}, `step "s" is already registered`},
		{"a workflow twice with other types", []workflow.Definition{
			workflow.New("w", func(workflow.Context, int) (int, error) { return 0, nil }),
			workflow.New("w", func(workflow.Context, string) (string, error) { return "", nil }),
		}, `workflow "w" is already registered`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := workflow.NewRegistry()
			err := r.Register(tc.defs...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Register: %v, want an error saying %q", err, tc.want)
			}
			if err := r.Register(workflow.NewStep("ok", noop)); err != nil {
				t.Fatalf("a later Register: %v", err)
			}
		})
	}
	// A name registered by an earlier call is refused too, whatever its types.
	r := workflow.NewRegistry().MustRegister(workflow.NewStep("taken", noop), workflow.New("taken", func(workflow.Context, int) (int, error) { return 0, nil }))
	for _, d := range []workflow.Definition{
		workflow.NewStep("taken", func(context.Context, []byte) (string, error) { return "", nil }),
		workflow.New("taken", func(workflow.Context, string) (int, error) { return 0, nil }),
	} {
		if err := r.Register(d); err == nil || !strings.Contains(err.Error(), "already registered") {
			t.Errorf("Register of a second %T named %q: %v, want already registered", d, d.Name(), err)
		}
	}
	ok := strings.Repeat("n", world.MaxNameLength)
	if err := workflow.NewRegistry().Register(workflow.NewStep(ok, noop)); err != nil {
		t.Fatalf("a %d-byte name: %v", len(ok), err)
	}
}
