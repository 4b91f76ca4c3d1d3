package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
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
		defs []sdk.Definition
		want string
	}{
		{"empty name", []sdk.Definition{sdk.NewStep("", noop)}, "empty name"},
		{"long step name", []sdk.Definition{sdk.NewStep(long, noop)}, "more than 256"},
		{"long workflow name", []sdk.Definition{sdk.New(long, func(sdk.Context, int) (int, error) { return 0, nil })}, "more than 256"},
		{"step name not UTF-8", []sdk.Definition{sdk.NewStep("charge\xff", noop)}, "not valid UTF-8"},
		{"workflow name not UTF-8", []sdk.Definition{sdk.New("order\xc3(", func(sdk.Context, int) (int, error) { return 0, nil })}, "not valid UTF-8"},
		{"step name with a newline", []sdk.Definition{sdk.NewStep("new\nline", noop)}, "control character U+000A"},
		{"workflow name with a tab", []sdk.Definition{sdk.New("tab\there", func(sdk.Context, int) (int, error) { return 0, nil })}, "control character U+0009"},
		{"workflow name with an escape", []sdk.Definition{sdk.New("esc\x1b[31mred", func(sdk.Context, int) (int, error) { return 0, nil })}, "control character U+001B"},
		{"step name with DEL", []sdk.Definition{sdk.NewStep("del\x7f", noop)}, "control character U+007F"},
		{"step name with a C1 control", []sdk.Definition{sdk.NewStep("csi\u009b", noop)}, "control character U+009B"},
		{"a step twice", []sdk.Definition{sdk.NewStep("s", noop), sdk.NewStep("s", noop)}, "already registered"},
		{"a step twice with other types", []sdk.Definition{sdk.NewStep("s", noop), sdk.NewStep("s", func(context.Context, string) (bool, error) { return false, nil })}, `step "s" is already registered`},
		{"a workflow twice with other types", []sdk.Definition{
			sdk.New("w", func(sdk.Context, int) (int, error) { return 0, nil }),
			sdk.New("w", func(sdk.Context, string) (string, error) { return "", nil }),
		}, `workflow "w" is already registered`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := sdk.NewRegistry()
			err := r.Register(tc.defs...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Register: %v, want an error saying %q", err, tc.want)
			}
			if err := r.Register(sdk.NewStep("ok", noop)); err != nil {
				t.Fatalf("a later Register: %v", err)
			}
		})
	}
	// A name registered by an earlier call is refused too, whatever its types.
	r := sdk.NewRegistry().MustRegister(sdk.NewStep("taken", noop), sdk.New("taken", func(sdk.Context, int) (int, error) { return 0, nil }))
	for _, d := range []sdk.Definition{
		sdk.NewStep("taken", func(context.Context, []byte) (string, error) { return "", nil }),
		sdk.New("taken", func(sdk.Context, string) (int, error) { return 0, nil }),
	} {
		if err := r.Register(d); err == nil || !strings.Contains(err.Error(), "already registered") {
			t.Errorf("Register of a second %T named %q: %v, want already registered", d, d.Name(), err)
		}
	}
	ok := strings.Repeat("n", world.MaxNameLength)
	if err := sdk.NewRegistry().Register(sdk.NewStep("emoji ✓ and accents é", noop)); err != nil {
		t.Fatalf("a printable non-ASCII name: %v", err)
	}
	if err := sdk.NewRegistry().Register(sdk.NewStep(ok, noop)); err != nil {
		t.Fatalf("a %d-byte name: %v", len(ok), err)
	}
}

// Names and tokens that are not valid UTF-8 are refused where they enter:
// a run of such a workflow name is not created, a hook with such a token
// fails its Receive with a clear error (JSON would rewrite the bytes, and
// the name read back from the log would match nothing).
func TestNamesNotUTF8(t *testing.T) {
	t.Parallel()
	badToken := sdk.New("bad-token", func(ctx sdk.Context, _ int) (int, error) {
		return sdk.NewHook[int](ctx, sdk.HookOptions{Token: "approve/\xff"}).Receive(ctx)
	})
	e := newEnv(t, badToken)
	ctx := e.ctx()
	_, err := e.client.Start(ctx, "order\xff", 1, sdk.StartUnregistered())
	if !errors.Is(err, world.ErrInvalid) || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("Start of a workflow name that is not UTF-8: %v", err)
	}
	run, err := badToken.Start(ctx, e.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Result(ctx)
	if err == nil || !strings.Contains(err.Error(), `hook token "approve/\xff" is not valid UTF-8`) {
		t.Errorf("a hook token that is not UTF-8: %v", err)
	}
}

// Registering the very same definition again is a no-op, in one call or
// across calls; a different definition under a taken name is refused.
func TestRegisterSameDefinitionTwice(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, int) (int, error) { return 0, nil }
	s := sdk.NewStep("shared", noop)
	w := sdk.New("flow", func(sdk.Context, int) (int, error) { return 0, nil })
	for _, tc := range []struct {
		name  string
		calls [][]sdk.Definition
		want  string // the last call's error, "" for none
	}{
		{"same workflow in one call", [][]sdk.Definition{{w, w}}, ""},
		{"same step in one call", [][]sdk.Definition{{s, w, s}}, ""},
		{"same step from two places", [][]sdk.Definition{{s, w}, {s}}, ""},
		{"same workflow again", [][]sdk.Definition{{w}, {w, s}}, ""},
		{"another step with the name", [][]sdk.Definition{{s}, {sdk.NewStep("shared", noop)}}, `step "shared" is already registered`},
		{"another step with the name in one call", [][]sdk.Definition{{s, sdk.NewStep("shared", noop)}}, `step "shared" is already registered`},
		{"another workflow with the name", [][]sdk.Definition{{w, w}, {sdk.New("flow", func(sdk.Context, int) (int, error) { return 0, nil })}}, `workflow "flow" is already registered`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := sdk.NewRegistry()
			var err error
			for i, defs := range tc.calls {
				if err = r.Register(defs...); err != nil && i < len(tc.calls)-1 {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			if tc.want == "" && err != nil {
				t.Fatalf("Register: %v, want no error", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Register: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
