package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

var add = sdk.NewStep("add", func(ctx context.Context, in [2]int) (int, error) { return in[0] + in[1], nil })

var addTen = sdk.New("addTen", func(ctx sdk.Context, n int) (int, error) {
	for _, k := range []int{2, 3, 5} {
		var err error
		if n, err = add.Call(ctx, [2]int{n, k}); err != nil {
			return 0, err
		}
	}
	return n, nil
})

func TestAddTen(t *testing.T) {
	t.Parallel()
	e := newEnv(t, addTen, add)
	ctx := e.ctx()
	run, err := addTen.Start(ctx, e.client, 123)
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil || got != 133 {
		t.Fatalf("result = %d, %v; want 133", got, err)
	}
	info, err := run.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != world.RunStatusCompleted || string(info.Input) != "123" || string(info.Output) != "133" || info.WorkflowName != "addTen" {
		t.Errorf("run row = %+v", info)
	}
}

func delayed(name string) *sdk.Step[time.Duration, string] {
	return sdk.NewStep(name, func(ctx context.Context, d time.Duration) (string, error) {
		if err := sleepCtx(ctx, d); err != nil {
			return "", err
		}
		return name, nil
	})
}

func TestPromiseCombinators(t *testing.T) {
	t.Parallel()
	a, b, c := delayed("A"), delayed("B"), delayed("C")
	fatalStep := sdk.NewStep("fatal", func(ctx context.Context, _ struct{}) (string, error) {
		return "", sdk.Fatal(errors.New("nope"))
	})
	all := sdk.New("all", func(ctx sdk.Context, _ struct{}) (string, error) {
		r := ctx.Rand()
		vs, err := sdk.All(ctx,
			a.Go(ctx, time.Duration(r.IntN(30))*time.Millisecond),
			b.Go(ctx, time.Duration(r.IntN(30))*time.Millisecond),
			c.Go(ctx, time.Duration(r.IntN(30))*time.Millisecond))
		if err != nil {
			return "", err
		}
		return vs[0] + vs[1] + vs[2], nil
	})
	race := sdk.New("race", func(ctx sdk.Context, _ struct{}) (string, error) {
		return sdk.Race(ctx, a.Go(ctx, time.Hour), b.Go(ctx, 20*time.Millisecond), c.Go(ctx, time.Hour))
	})
	anyWf := sdk.New("any", func(ctx sdk.Context, _ struct{}) (string, error) {
		return sdk.Any(ctx, fatalStep.Go(ctx, struct{}{}), b.Go(ctx, 20*time.Millisecond), c.Go(ctx, time.Hour))
	})
	e := newEnv(t, all, race, anyWf, a, b, c, fatalStep)
	// Race and Any settle with the first (successful) step; the others take
	// an hour, so a combinator that waited for them would blow the bound,
	// which is wide enough for a machine many times slower than ours.
	for _, tc := range []struct {
		wf   *sdk.Workflow[struct{}, string]
		want string
		max  time.Duration
	}{
		{all, "ABC", 15 * time.Second},
		{race, "B", 15 * time.Second},
		{anyWf, "B", 15 * time.Second},
	} {
		t.Run(tc.wf.Name(), func(t *testing.T) {
			t.Parallel()
			ctx := e.ctx()
			start := time.Now()
			run, err := tc.wf.Start(ctx, e.client, struct{}{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(ctx)
			if err != nil || got != tc.want {
				t.Fatalf("result = %q, %v; want %q", got, err, tc.want)
			}
			if el := time.Since(start); el > tc.max {
				t.Errorf("took %s, want under %s", el, tc.max)
			}
		})
	}
}

func TestNullByte(t *testing.T) {
	t.Parallel()
	echo := sdk.NewStep("echo", func(ctx context.Context, s string) (string, error) { return s, nil })
	wf := sdk.New("nullByte", func(ctx sdk.Context, _ struct{}) (string, error) {
		return echo.Call(ctx, "null byte \x00")
	})
	e := newEnv(t, wf, echo)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || got != "null byte \x00" {
		t.Fatalf("result = %q, %v", got, err)
	}
}

type metaResult struct {
	Outer sdk.WorkflowMetadata
	Inner sdk.WorkflowMetadata
	Step  sdk.StepMetadata
	InOK  bool
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	type stepOut struct {
		W  sdk.WorkflowMetadata
		S  sdk.StepMetadata
		OK bool
	}
	inStep := sdk.NewStep("meta-step", func(ctx context.Context, _ struct{}) (stepOut, error) {
		w, ok1 := sdk.WorkflowMetadataFrom(ctx)
		s, ok2 := sdk.StepMetadataFrom(ctx)
		return stepOut{W: w, S: s, OK: ok1 && ok2}, nil
	})
	wf := sdk.New("metadata", func(ctx sdk.Context, _ struct{}) (metaResult, error) {
		out, err := inStep.Call(ctx, struct{}{})
		return metaResult{Outer: ctx.Workflow(), Inner: out.W, Step: out.S, InOK: out.OK}, err
	})
	e := newEnv(t, wf, inStep)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !got.InOK {
		t.Fatal("metadata missing in the step")
	}
	if got.Outer.RunID != run.ID() || got.Outer.WorkflowName != "metadata" || got.Outer.StartedAt.IsZero() {
		t.Errorf("outer metadata = %+v", got.Outer)
	}
	if got.Outer.RunID != got.Inner.RunID || got.Outer.WorkflowName != got.Inner.WorkflowName || !got.Outer.StartedAt.Equal(got.Inner.StartedAt) {
		t.Errorf("outer %+v != in-step %+v", got.Outer, got.Inner)
	}
	s := got.Step
	if s.StepName != "meta-step" || s.Attempt < 1 || s.StartedAt.IsZero() || len(s.StepID) < 6 || s.StepID[:5] != "step_" {
		t.Errorf("step metadata = %+v", s)
	}
	if _, ok := sdk.StepMetadataFrom(context.Background()); ok {
		t.Error("step metadata outside a step")
	}
	b, _ := json.Marshal(got)
	t.Logf("%s", b)
}
