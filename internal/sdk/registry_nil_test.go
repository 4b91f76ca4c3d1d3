package sdk_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// TestRegisterNilDefinition: a nil definition, or a nil *Step or
// *Workflow (a package-level one used before it is assigned), is refused
// with an error matching world.ErrInvalid, not a panic, and nothing of
// the call is registered.
func TestRegisterNilDefinition(t *testing.T) {
	t.Parallel()
	ok := sdk.New("nil-test-ok", func(ctx sdk.Context, in int) (int, error) { return in, nil })
	var step *sdk.Step[int, int]
	var wf *sdk.Workflow[int, int]
	for _, tc := range []struct {
		name string
		def  sdk.Definition
		want string
	}{
		{"nil", nil, "definition 2 is nil"},
		{"nil step", step, "definition 2 is a nil *workflow.Step[int,int]"},
		{"nil workflow", wf, "definition 2 is a nil *workflow.Workflow[int,int]"},
	} {
		reg := sdk.NewRegistry()
		err := reg.Register(ok, tc.def)
		if !errors.Is(err, world.ErrInvalid) || !strings.Contains(errString(err), tc.want) {
			t.Errorf("%s: Register = %v, want ErrInvalid naming %q", tc.name, err, tc.want)
		}
		if got := sdk.Workflows(reg); len(got) != 0 {
			t.Errorf("%s: the call registered %q", tc.name, got)
		}
		if err := sdk.Replace(reg, tc.def); !errors.Is(err, world.ErrInvalid) {
			t.Errorf("%s: Replace = %v, want ErrInvalid", tc.name, err)
		}
	}
}
