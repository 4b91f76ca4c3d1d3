package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// Register's refusals are *RegistrationErrors: a name another definition
// holds matches world.ErrConflict, a reserved or malformed name
// world.ErrInvalid.
func TestRegistrationErrors(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, int) (int, error) { return 0, nil }
	wf := func(name string) sdk.Definition {
		return sdk.New(name, func(sdk.Context, int) (int, error) { return 0, nil })
	}
	for _, tc := range []struct {
		name     string
		earlier  []sdk.Definition
		defs     []sdk.Definition
		kind     string
		defName  string
		problem  string
		sentinel error
		says     string
	}{
		{"a step name taken in the call", nil, []sdk.Definition{sdk.NewStep("dup", noop), sdk.NewStep("dup", noop)},
			"step", "dup", sdk.RegistrationTaken, world.ErrConflict, "already registered"},
		{"a workflow name taken before", []sdk.Definition{wf("flow")}, []sdk.Definition{wf("flow")},
			"workflow", "flow", sdk.RegistrationTaken, world.ErrConflict, "already registered"},
		{"the child-start step's name", nil, []sdk.Definition{sdk.NewStep("skein.start-child", noop)},
			"step", "skein.start-child", sdk.RegistrationReserved, world.ErrInvalid, "reserved"},
		{"a step under the reserved prefix", nil, []sdk.Definition{sdk.NewStep("skein.mine", noop)},
			"step", "skein.mine", sdk.RegistrationReserved, world.ErrInvalid, "reserved"},
		{"a workflow under the reserved prefix", nil, []sdk.Definition{wf("skein.flow")},
			"workflow", "skein.flow", sdk.RegistrationReserved, world.ErrInvalid, "reserved"},
		{"an empty name", nil, []sdk.Definition{sdk.NewStep("", noop)},
			"step", "", sdk.RegistrationInvalidName, world.ErrInvalid, "empty name"},
		{"a name of spaces", nil, []sdk.Definition{wf("  ")},
			"workflow", "  ", sdk.RegistrationInvalidName, world.ErrInvalid, "spaces only"},
		{"a name with a newline", nil, []sdk.Definition{wf("a\nb")},
			"workflow", "a\nb", sdk.RegistrationInvalidName, world.ErrInvalid, "control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := sdk.NewRegistry().MustRegister(tc.earlier...)
			err := r.Register(append(tc.defs, sdk.NewStep("innocent", noop))...)
			var re *sdk.RegistrationError
			if !errors.As(err, &re) {
				t.Fatalf("Register = %v (%T); want a *RegistrationError", err, err)
			}
			if re.Kind != tc.kind || re.Name != tc.defName || re.Problem != tc.problem {
				t.Errorf("RegistrationError %+v; want kind %s, name %q, problem %q", re, tc.kind, tc.defName, tc.problem)
			}
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Register = %v; want an error matching %v saying %q", err, tc.sentinel, tc.says)
			}
			if err := r.Register(sdk.NewStep("innocent", noop)); err != nil {
				t.Errorf("a refused call registered part of itself: %v", err)
			}
		})
	}
}
