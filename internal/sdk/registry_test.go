package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	workflow "github.com/skeinflow/skein/internal/sdk"
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
		{"step name not UTF-8", []workflow.Definition{workflow.NewStep("charge\xff", noop)}, "not valid UTF-8"},
		{"workflow name not UTF-8", []workflow.Definition{workflow.New("order\xc3(", func(workflow.Context, int) (int, error) { return 0, nil })}, "not valid UTF-8"},
		{"step name with a newline", []workflow.Definition{workflow.NewStep("new\nline", noop)}, "control character U+000A"},
		{"workflow name with a tab", []workflow.Definition{workflow.New("tab\there", func(workflow.Context, int) (int, error) { return 0, nil })}, "control character U+0009"},
		{"workflow name with an escape", []workflow.Definition{workflow.New("esc\x1b[31mred", func(workflow.Context, int) (int, error) { return 0, nil })}, "control character U+001B"},
		{"step name with DEL", []workflow.Definition{workflow.NewStep("del\x7f", noop)}, "control character U+007F"},
		{"step name with a C1 control", []workflow.Definition{workflow.NewStep("csi\u009b", noop)}, "control character U+009B"},
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
	if err := workflow.NewRegistry().Register(workflow.NewStep("emoji ✓ and accents é", noop)); err != nil {
		t.Fatalf("a printable non-ASCII name: %v", err)
	}
	if err := workflow.NewRegistry().Register(workflow.NewStep(ok, noop)); err != nil {
		t.Fatalf("a %d-byte name: %v", len(ok), err)
	}
}

// Names and tokens that are not valid UTF-8 are refused where they enter:
// a run of such a workflow name is not created, a hook with such a token
// fails its Receive with a clear error (JSON would rewrite the bytes, and
// the name read back from the log would match nothing).
func TestNamesNotUTF8(t *testing.T) {
	t.Parallel()
	badToken := workflow.New("bad-token", func(ctx workflow.Context, _ int) (int, error) {
		return workflow.NewHook[int](ctx, workflow.HookOptions{Token: "approve/\xff"}).Receive(ctx)
	})
	e := newEnv(t, badToken)
	ctx := e.ctx()
	_, err := e.client.Start(ctx, "order\xff", 1, workflow.StartUnregistered())
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
	s := workflow.NewStep("shared", noop)
	w := workflow.New("flow", func(workflow.Context, int) (int, error) { return 0, nil })
	for _, tc := range []struct {
		name  string
		calls [][]workflow.Definition
		want  string // the last call's error, "" for none
	}{
		{"same workflow in one call", [][]workflow.Definition{{w, w}}, ""},
		{"same step in one call", [][]workflow.Definition{{s, w, s}}, ""},
		{"same step from two places", [][]workflow.Definition{{s, w}, {s}}, ""},
		{"same workflow again", [][]workflow.Definition{{w}, {w, s}}, ""},
		{"another step with the name", [][]workflow.Definition{{s}, {workflow.NewStep("shared", noop)}}, `step "shared" is already registered`},
		{"another step with the name in one call", [][]workflow.Definition{{s, workflow.NewStep("shared", noop)}}, `step "shared" is already registered`},
		{"another workflow with the name", [][]workflow.Definition{{w, w}, {workflow.New("flow", func(workflow.Context, int) (int, error) { return 0, nil })}}, `workflow "flow" is already registered`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := workflow.NewRegistry()
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
