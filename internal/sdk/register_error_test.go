package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	workflow "github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// Register's refusals are *RegistrationErrors: a name another definition
// holds matches world.ErrConflict, a reserved or malformed name
// world.ErrInvalid.
func TestRegistrationErrors(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, int) (int, error) { return 0, nil }
	wf := func(name string) workflow.Definition {
		return workflow.New(name, func(workflow.Context, int) (int, error) { return 0, nil })
	}
	for _, tc := range []struct {
		name     string
		earlier  []workflow.Definition
		defs     []workflow.Definition
		kind     string
		defName  string
		problem  string
		sentinel error
		says     string
	}{
		{"a step name taken in the call", nil, []workflow.Definition{workflow.NewStep("dup", noop), workflow.NewStep("dup", noop)},
			"step", "dup", workflow.RegistrationTaken, world.ErrConflict, "already registered"},
		{"a workflow name taken before", []workflow.Definition{wf("flow")}, []workflow.Definition{wf("flow")},
			"workflow", "flow", workflow.RegistrationTaken, world.ErrConflict, "already registered"},
		{"the child-start step's name", nil, []workflow.Definition{workflow.NewStep("skein.start-child", noop)},
			"step", "skein.start-child", workflow.RegistrationReserved, world.ErrInvalid, "reserved"},
		{"a step under the reserved prefix", nil, []workflow.Definition{workflow.NewStep("skein.mine", noop)},
			"step", "skein.mine", workflow.RegistrationReserved, world.ErrInvalid, "reserved"},
		{"a workflow under the reserved prefix", nil, []workflow.Definition{wf("skein.flow")},
			"workflow", "skein.flow", workflow.RegistrationReserved, world.ErrInvalid, "reserved"},
		{"an empty name", nil, []workflow.Definition{workflow.NewStep("", noop)},
			"step", "", workflow.RegistrationInvalidName, world.ErrInvalid, "empty name"},
		{"a name with a newline", nil, []workflow.Definition{wf("a\nb")},
			"workflow", "a\nb", workflow.RegistrationInvalidName, world.ErrInvalid, "control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := workflow.NewRegistry().MustRegister(tc.earlier...)
			err := r.Register(append(tc.defs, workflow.NewStep("innocent", noop))...)
			var re *workflow.RegistrationError
			if !errors.As(err, &re) {
				t.Fatalf("Register = %v (%T); want a *RegistrationError", err, err)
			}
			if re.Kind != tc.kind || re.Name != tc.defName || re.Problem != tc.problem {
				t.Errorf("RegistrationError %+v; want kind %s, name %q, problem %q", re, tc.kind, tc.defName, tc.problem)
			}
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Register = %v; want an error matching %v saying %q", err, tc.sentinel, tc.says)
			}
			if err := r.Register(workflow.NewStep("innocent", noop)); err != nil {
				t.Errorf("a refused call registered part of itself: %v", err)
			}
		})
	}
}
