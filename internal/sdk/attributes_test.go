package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// tagged sets attributes mid-run, waits on a hook, and sets one again
// before it returns.
var tagged = sdk.New("tagged", func(ctx sdk.Context, tenant string) (int, error) {
	if err := sdk.SetAttributes(ctx, map[string]string{"tenant": tenant, "stage": "charged"}); err != nil {
		return 0, err
	}
	n, err := add.Call(ctx, [2]int{1, 2})
	if err != nil {
		return 0, err
	}
	h := sdk.NewHook[hookPayload](ctx, sdk.HookOptions{Token: "tagged-" + tenant})
	if _, err := h.Receive(ctx); err != nil {
		return 0, err
	}
	return n, sdk.SetAttributes(ctx, map[string]string{"stage": "done"})
})

// listedBy returns the IDs of the runs ListRuns finds by the attribute.
func listedBy(t *testing.T, c *sdk.Client, key, value string) []string {
	t.Helper()
	p, err := c.ListRuns(context.Background(), sdk.ListRunsOptions{Attribute: &world.AttributeFilter{Key: key, Value: value}, Limit: 100})
	if err != nil {
		t.Fatalf("ListRuns(%s=%s): %v", key, value, err)
	}
	var ids []string
	for _, r := range p.Runs {
		ids = append(ids, r.ID)
	}
	return ids
}

// Attributes set by the workflow and by a client are recorded once each,
// survive a restart (replay does not record the code's again) and find the
// run in ListRuns.
func TestSetAttributesAcrossRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "skein.db")
	start := func() (*localworld.World, *sdk.Client, func()) {
		lw, err := localworld.Open(localworld.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		reg := sdk.NewRegistry().MustRegister(tagged, add)
		w, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Registry: reg}, knobs.WithPollWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		return lw, w.Client(), func() { cancel(); <-done; _ = lw.Close() }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, client, stop := start()
	run, err := tagged.Start(ctx, client, "acme", sdk.WithAttributes(map[string]string{"origin": "test"}))
	if err != nil {
		t.Fatal(err)
	}
	other, err := tagged.Start(ctx, client, "globex")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both runs wait on their hooks", func() bool {
		_, e1 := client.GetHookByToken(ctx, "tagged-acme")
		_, e2 := client.GetHookByToken(ctx, "tagged-globex")
		return e1 == nil && e2 == nil
	})
	if err := client.SetAttributes(ctx, run.ID(), map[string]string{"reviewer": "ann"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, value string }{{"tenant", "acme"}, {"reviewer", "ann"}, {"origin", "test"}} {
		if got := listedBy(t, client, tc.key, tc.value); !slices.Equal(got, []string{run.ID()}) {
			t.Fatalf("ListRuns(%s=%s) = %v, want [%s]", tc.key, tc.value, got, run.ID())
		}
	}
	if got := listedBy(t, client, "stage", "charged"); !slices.Equal(got, []string{other.ID(), run.ID()}) {
		t.Fatalf("ListRuns(stage=charged) = %v, want both runs newest first", got)
	}
	stop() // the process goes away while the runs wait

	lw, client, stop := start()
	defer stop()
	if _, err := client.ResumeHook(ctx, "tagged-acme", hookPayload{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	if got, err := tagged.Get(client, run.ID()).Result(ctx); err != nil || got != 3 {
		t.Fatalf("tagged = %d, %v", got, err)
	}
	info, err := client.GetRun(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"origin": "test", "tenant": "acme", "stage": "done", "reviewer": "ann"}
	if !maps.Equal(info.Attributes, want) {
		t.Fatalf("attributes %v, want %v", info.Attributes, want)
	}
	if got := listedBy(t, client, "stage", "charged"); !slices.Equal(got, []string{other.ID()}) {
		t.Fatalf("ListRuns(stage=charged) after the run moved on = %v, want [%s]", got, other.ID())
	}
	if got := listedBy(t, client, "stage", "done"); !slices.Equal(got, []string{run.ID()}) {
		t.Fatalf("ListRuns(stage=done) = %v, want [%s]", got, run.ID())
	}
	evs, err := lw.ListEvents(ctx, &world.ListEventsParams{RunID: run.ID(), Pagination: world.Pagination{Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	var sets []string
	for _, ev := range evs.Items {
		if d, ok := ev.Data.(*world.AttributeSet); ok {
			who := "client"
			if ev.CorrelationID != "" {
				who = "code"
			}
			sets = append(sets, fmt.Sprintf("%s:%s", who, strings.Join(slices.Sorted(maps.Keys(d.Attributes)), ",")))
		}
	}
	if w := []string{"code:stage,tenant", "client:reviewer", "code:stage"}; !slices.Equal(sets, w) {
		t.Fatalf("attribute_set events %v, want %v (each once, in order)", sets, w)
	}
	// The end commits run_deactivated with it: nothing runs any more.
	if n := len(evs.Items); evs.Items[n-2].Type() != world.EventRunCompleted || evs.Items[n-1].Type() != world.EventRunDeactivated {
		t.Fatalf("the log ends with %s, %s", evs.Items[n-2].Type(), evs.Items[n-1].Type())
	}
}

// attrLimits tries what SetAttributes refuses, and reports what it got.
var attrLimits = sdk.New("attrLimits", func(ctx sdk.Context, _ int) ([]string, error) {
	var out []string
	try := func(attrs map[string]string) {
		err := sdk.SetAttributes(ctx, attrs)
		var re *world.RefusalError
		switch {
		case err == nil:
			out = append(out, "ok")
		case errors.Is(err, world.ErrInvalid) && errors.As(err, &re):
			out = append(out, re.Reason)
		default:
			out = append(out, "untyped: "+err.Error())
		}
	}
	try(map[string]string{"bad key": "v"})
	try(map[string]string{"big": strings.Repeat("v", world.MaxAttributeValueLength+1)})
	try(map[string]string{"k15": "v"}) // the 16th: fits
	try(map[string]string{"k16": "v"}) // the 17th
	try(map[string]string{"k00": "again"})
	if _, err := add.Call(ctx, [2]int{0, 0}); err != nil {
		return nil, err
	}
	return out, nil
})

func TestSetAttributesRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, attrLimits, add)
	ctx := e.ctx()
	start := map[string]string{}
	for i := range world.MaxAttributes - 1 {
		start[fmt.Sprintf("k%02d", i)] = "v"
	}
	run, err := attrLimits.Start(ctx, e.client, 0, sdk.WithAttributes(start))
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wants := []string{`"bad key"`, `"big"`, "ok", `"k16" would be attribute 17`, "ok"}
	if len(got) != len(wants) {
		t.Fatalf("got %q", got)
	}
	for i, w := range wants {
		if !strings.Contains(got[i], w) {
			t.Fatalf("call %d: got %q, want it to contain %q (all: %q)", i, got[i], w, got)
		}
	}
	evs := e.events(run.ID())
	if n := countEvents(evs, world.EventAttributeSet); n != 2 {
		t.Fatalf("%d attribute_set events, want 2 (the refused calls record nothing)", n)
	}
	info, err := e.client.GetRun(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Attributes) != world.MaxAttributes || info.Attributes["k00"] != "again" || info.Attributes["k16"] != "" {
		t.Fatalf("attributes %v", info.Attributes)
	}
	// The client's bad input: typed errors, the run unchanged.
	for _, attrs := range []map[string]string{{"a/b": "1"}, {"k99": "v"}, {"k00": ""}} {
		if err := e.client.SetAttributes(ctx, run.ID(), attrs); !errors.Is(err, world.ErrInvalid) {
			t.Fatalf("Client.SetAttributes(%v) = %v, want ErrInvalid", attrs, err)
		}
	}
	if err := e.client.SetAttributes(ctx, "wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV", map[string]string{"a": "1"}); !errors.Is(err, world.ErrNotFound) {
		t.Fatalf("Client.SetAttributes on a missing run = %v, want ErrNotFound", err)
	}
	if after := e.events(run.ID()); len(after) != len(evs) {
		t.Fatalf("refused client calls appended %d events", len(after)-len(evs))
	}
	if _, err := attrLimits.Start(ctx, e.client, 0, sdk.WithAttributes(map[string]string{"a b": "1"})); !errors.Is(err, world.ErrInvalid) {
		t.Fatalf("Start with an invalid attribute key = %v, want ErrInvalid", err)
	}
	if _, err := e.client.ListRuns(ctx, sdk.ListRunsOptions{Attribute: &world.AttributeFilter{Key: "a b", Value: "1"}}); !errors.Is(err, world.ErrInvalid) {
		t.Fatalf("ListRuns by an invalid key = %v, want ErrInvalid", err)
	}
}

// A workflow that sets attributes and returns at once: they are recorded
// before the run's end, and its log replays.
var attrsThenReturn = sdk.New("attrsThenReturn", func(ctx sdk.Context, keys []string) (int, error) {
	for _, k := range keys {
		if err := sdk.SetAttributes(ctx, map[string]string{k: "set"}); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
})

func TestSetAttributesReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, attrsThenReturn)
	ctx := e.ctx()
	run, err := attrsThenReturn.Start(ctx, e.client, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
	evs := e.events(run.ID())
	var types []world.EventType
	for _, ev := range evs {
		types = append(types, ev.Type())
	}
	if w := []world.EventType{world.EventRunCreated, world.EventRunStarted, world.EventAttributeSet, world.EventAttributeSet, world.EventRunCompleted,
		world.EventRunDeactivated}; !slices.Equal(types, w) {
		t.Fatalf("log %v, want %v", types, w)
	}
	for _, tc := range []struct {
		name       string
		code       func(sdk.Context, []string) (int, error)
		compatible bool
	}{
		{"same code", func(ctx sdk.Context, keys []string) (int, error) {
			for _, k := range keys {
				_ = sdk.SetAttributes(ctx, map[string]string{k: "set"})
			}
			return len(keys), nil
		}, true},
		{"other values, same keys", func(ctx sdk.Context, keys []string) (int, error) {
			for _, k := range keys {
				_ = sdk.SetAttributes(ctx, map[string]string{k: "changed"})
			}
			return len(keys), nil
		}, true},
		{"other keys", func(ctx sdk.Context, keys []string) (int, error) {
			for _, k := range keys {
				_ = sdk.SetAttributes(ctx, map[string]string{"x" + k: "set"})
			}
			return len(keys), nil
		}, false},
		{"no attributes", func(ctx sdk.Context, keys []string) (int, error) { return len(keys), nil }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := sdk.NewRegistry().MustRegister(sdk.New("attrsThenReturn", tc.code))
			rep, err := sdk.CheckLog(reg, evs)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Compatible() != tc.compatible {
				t.Fatalf("compatible = %v, want %v: %s", rep.Compatible(), tc.compatible, rep)
			}
		})
	}
}

// attrsThenStep sets attributes and then waits on a step: its
// attribute_set is matched by position, as the step's creation is.
func attrsThenStep(key string) func(sdk.Context, int) (int, error) {
	return func(ctx sdk.Context, n int) (int, error) {
		if key != "" {
			if err := sdk.SetAttributes(ctx, map[string]string{key: "v"}); err != nil {
				return 0, err
			}
		}
		return add.Call(ctx, [2]int{n, 1})
	}
}

func TestSetAttributesReplayMidRun(t *testing.T) {
	t.Parallel()
	wf := sdk.New("attrsThenStep", attrsThenStep("a"))
	e := newEnv(t, wf, add)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
	evs := e.events(run.ID())
	var types []world.EventType
	for _, ev := range evs {
		types = append(types, ev.Type())
	}
	if i := slices.Index(types, world.EventAttributeSet); i < 0 || i > slices.Index(types, world.EventStepCreated) {
		t.Fatalf("log %v: want the attribute_set before the step's creation", types)
	}
	for _, tc := range []struct {
		key        string
		compatible bool
	}{{"a", true}, {"b", false}, {"", false}} {
		t.Run("key "+tc.key, func(t *testing.T) {
			t.Parallel()
			reg := sdk.NewRegistry().MustRegister(sdk.New("attrsThenStep", attrsThenStep(tc.key)), add)
			rep, err := sdk.CheckLog(reg, evs)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Compatible() != tc.compatible {
				t.Fatalf("compatible = %v, want %v: %s", rep.Compatible(), tc.compatible, rep)
			}
		})
	}
}

// A patch's marker rides on the attribute_set that follows it, like on a
// step's creation, and replay finds it there.
func TestSetAttributesCarriesPatchMarker(t *testing.T) {
	t.Parallel()
	wf := sdk.New("patchedAttrs", func(ctx sdk.Context, n int) (int, error) {
		if sdk.Patched(ctx, "tag-runs") {
			if err := sdk.SetAttributes(ctx, map[string]string{"tagged": "yes"}); err != nil {
				return 0, err
			}
		}
		return add.Call(ctx, [2]int{n, 1})
	})
	e := newEnv(t, wf, add)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
	evs := e.events(run.ID())
	i := slices.IndexFunc(evs, func(ev world.Event) bool { return ev.Type() == world.EventAttributeSet })
	if i < 0 || !runrules.HasPatch(&evs[i], "tag-runs") {
		t.Fatalf("no attribute_set with the patch marker in %v", evs)
	}
	rep, err := sdk.CheckLog(e.reg, evs)
	if err != nil || !rep.Compatible() {
		t.Fatalf("the run's own code does not replay its log: %v, %v", rep, err)
	}
}

// TestClientSetAttributesBadRunID: a malformed run ID is refused as such
// (ErrInvalid), not with the ID parser's words.
func TestClientSetAttributesBadRunID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, attrLimits, add)
	err := e.client.SetAttributes(e.ctx(), "wrun_nope", map[string]string{"k": "v"})
	if !errors.Is(err, world.ErrInvalid) || !strings.Contains(err.Error(), `"wrun_nope" is not a run ID`) || strings.Contains(err.Error(), "ulid") {
		t.Fatalf("SetAttributes(wrun_nope) = %v", err)
	}
}

// attrsReserved tries to set a schedule's attributes from workflow code.
var attrsReserved = sdk.New("attrsReserved", func(ctx sdk.Context, _ int) (string, error) {
	err := sdk.SetAttributes(ctx, map[string]string{sdk.AttrSchedule: "nightly"})
	if !errors.Is(err, world.ErrInvalid) {
		return "", fmt.Errorf("SetAttributes(%s) = %v, want ErrInvalid", sdk.AttrSchedule, err)
	}
	return err.Error(), nil
})

// TestReservedAttributesRefused: the SDK's own attribute keys (a schedule's
// AttrSchedule and AttrScheduledTime, and any other starting with
// ReservedPrefix) are refused from callers (Start, Client.SetAttributes,
// workflow code) with ErrInvalid, and nothing is recorded.
func TestReservedAttributesRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, attrsReserved, attrLimits, add)
	ctx := e.ctx()
	for _, k := range []string{sdk.AttrSchedule, sdk.AttrScheduledTime, "skein.other"} {
		_, err := attrsReserved.Start(ctx, e.client, 0, sdk.WithAttributes(map[string]string{k: "2026-01-01T00:00:00Z"}))
		if !errors.Is(err, world.ErrInvalid) || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("Start with attribute %s = %v, want ErrInvalid saying it is reserved", k, err)
		}
	}
	if p, err := e.client.ListRuns(ctx, sdk.ListRunsOptions{}); err != nil || len(p.Runs) != 0 {
		t.Fatalf("refused starts created runs: %v, %v", p, err)
	}
	run, err := attrsReserved.Start(ctx, e.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil || !strings.Contains(got, "reserved") {
		t.Fatalf("the workflow's SetAttributes: %q, %v", got, err)
	}
	if err := e.client.SetAttributes(ctx, run.ID(), map[string]string{sdk.AttrScheduledTime: "x"}); !errors.Is(err, world.ErrInvalid) {
		t.Fatalf("Client.SetAttributes(%s) = %v, want ErrInvalid", sdk.AttrScheduledTime, err)
	}
	if n := countEvents(e.events(run.ID()), world.EventAttributeSet); n != 0 {
		t.Fatalf("%d attribute_set events, want none", n)
	}
}
