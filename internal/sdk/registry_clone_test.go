package sdk

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type cloneTestError struct{ Code string }

func (e *cloneTestError) Error() string { return "clone test: " + e.Code }

func TestRegistryCloneReplace(t *testing.T) {
	t.Parallel()
	greet := NewStep("greet", func(_ context.Context, name string) (string, error) { return "hello " + name, nil },
		StepOptions{MaxRetries: 7})
	flow := New("greeter", func(ctx Context, name string) (string, error) { return greet.Call(ctx, name) })
	reg := NewRegistry().MustRegister(flow, greet)
	if err := reg.RegisterError("clone-test", &cloneTestError{}); err != nil {
		t.Fatal(err)
	}

	clone := CloneRegistry(reg)
	stub := NewStep(greet.Name(), func(_ context.Context, name string) (string, error) { return "stub " + name, nil },
		OptionsOf(greet))
	if err := Replace(clone, stub); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	call := func(r *Registry) string {
		t.Helper()
		s, ok := engineRegistry{r}.Step("greet")
		if !ok {
			t.Fatal("no step greet")
		}
		if s.MaxRetries != 7 {
			t.Errorf("MaxRetries %d, want the original's 7", s.MaxRetries)
		}
		out, err := s.Fn(context.Background(), []byte(`"ann"`))
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	if got := call(clone); got != `"stub ann"` {
		t.Errorf("clone runs %s, want the stub", got)
	}
	if got := call(reg); got != `"hello ann"` {
		t.Errorf("the original registry runs %s after Replace in its clone", got)
	}
	if _, ok := (engineRegistry{clone}).Workflow("greeter"); !ok {
		t.Error("the clone lacks the workflow")
	}
	// The clone keeps the error types: a registered error survives its codec.
	d := clone.encode(&cloneTestError{Code: "x"})
	var back *cloneTestError
	if err := clone.decode(d); !errors.As(err, &back) || back.Code != "x" {
		t.Errorf("error round trip in the clone: %v", err)
	}
	// Registering in the clone leaves the original alone.
	other := NewStep("other", func(context.Context, int) (int, error) { return 0, nil })
	if err := clone.Register(other); err != nil {
		t.Fatal(err)
	}
	if _, ok := (engineRegistry{reg}).Step("other"); ok {
		t.Error("a step registered in the clone appeared in the original")
	}
	// Register still refuses a second definition of a replaced name.
	if err := clone.Register(greet); err == nil {
		t.Error("Register of the original step over its replacement succeeded")
	}
}

func TestRegistryReplaceUnknown(t *testing.T) {
	t.Parallel()
	reg := NewRegistry()
	known := NewStep("known", func(context.Context, int) (int, error) { return 1, nil })
	reg.MustRegister(known)
	unknown := NewStep("unknown", func(context.Context, int) (int, error) { return 2, nil })
	err := Replace(reg, NewStep("known", func(context.Context, int) (int, error) { return 3, nil }), unknown)
	if err == nil || !strings.Contains(err.Error(), `step "unknown" is not registered`) {
		t.Fatalf("err %v, want one naming the unknown step", err)
	}
	s, _ := engineRegistry{reg}.Step("known")
	if out, _ := s.Fn(context.Background(), []byte("0")); string(out) != "1" {
		t.Errorf("a failed Replace replaced the known step: it returns %s", out)
	}
	if err := Replace(reg, New("known", func(Context, int) (int, error) { return 0, nil })); err == nil {
		t.Error("Replace of a step by a workflow of its name succeeded")
	}
}
