package localworld

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

func TestAppendCommitIsAtomic(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		w := mustOpen(t, m.config(t))
		runID := newRun(t, w, "wf")
		stepID := testIDs.New(world.PrefixStep)
		_, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
			ev(stepID, &world.StepCreated{StepName: "s"}),
			ev(stepID, &world.StepStarted{}),
			ev(stepID, &world.StepCreated{StepName: "s"}), // duplicate: refused
		}})
		var ce *world.RefusalError
		if !errors.As(err, &ce) || ce.Index != 2 || !errors.Is(err, world.ErrConflict) {
			t.Fatalf("Append: %v, want RefusalError{Index: 2} matching ErrConflict", err)
		}
		if _, err := w.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: stepID}); !errors.Is(err, world.ErrNotFound) {
			t.Fatalf("GetStep after refused commit: %v, want ErrNotFound", err)
		}
		if evs := allEvents(t, w, runID); len(evs) != 2 {
			t.Fatalf("log has %d events after refused commit, want 2", len(evs))
		}
		// The events of one commit see each other's effects.
		res := mustAppend(t, w, runID,
			ev(stepID, &world.StepCreated{StepName: "s"}),
			ev(stepID, &world.StepStarted{}),
			ev(stepID, &world.StepCompleted{Result: json.RawMessage(`42`)}),
			ev("", &world.RunCompleted{Output: json.RawMessage(`42`)}))
		if res.Run.Status != world.RunStatusCompleted || res.Run.LastSeq != 6 {
			t.Fatalf("run after commit: %s at %d", res.Run.Status, res.Run.LastSeq)
		}
		for i, r := range res.Results {
			if r.Event == nil || r.Event.Seq != int64(3+i) {
				t.Fatalf("result %d: %+v", i, r.Event)
			}
		}
		st, err := w.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: stepID})
		if err != nil || st.Status != world.StepStatusCompleted || st.Attempt != 1 || string(st.Output) != "42" {
			t.Fatalf("GetStep: %+v, %v", st, err)
		}
	})
}

func TestAppendIfLastSeq(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		w := mustOpen(t, m.config(t))
		runID := newRun(t, w, "wf")
		_, err := w.Append(ctx, &world.AppendParams{RunID: runID, IfLastSeq: 1, Events: []world.EventInput{ev("", &world.RunCompleted{})}})
		wantErrIs(t, err, world.ErrConflict, "stale IfLastSeq")
		_, err = w.Append(ctx, &world.AppendParams{RunID: runID, IfLastSeq: 2, Events: []world.EventInput{ev("", &world.RunCompleted{})}})
		if err != nil {
			t.Fatalf("current IfLastSeq: %v", err)
		}
		_, err = w.Append(ctx, &world.AppendParams{RunID: runID})
		wantErrIs(t, err, world.ErrInvalid, "no events")
		_, err = w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{ev("", nil)}})
		wantErrIs(t, err, world.ErrInvalid, "nil data")
		for _, d := range []world.EventData{(*world.RunCreated)(nil), (*world.HookCreated)(nil), (*world.StepCreated)(nil)} {
			_, err = w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{ev(testIDs.New(world.PrefixHook), d)}})
			var ce *world.RefusalError
			if !errors.As(err, &ce) || !errors.Is(err, world.ErrInvalid) {
				t.Fatalf("typed nil %T: %v", d, err)
			}
		}
	})
}

func TestHooksTokensAndRunEnd(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		w := mustOpen(t, m.config(t))
		a, b := newRun(t, w, "wf"), newRun(t, w, "wf")
		h1, h2 := testIDs.New(world.PrefixHook), testIDs.New(world.PrefixHook)
		waitID := testIDs.New(world.PrefixWait)
		mustAppend(t, w, a,
			ev(h1, &world.HookCreated{Token: "tok"}),
			ev(h2, &world.HookCreated{Token: "tok2"}),
			ev(waitID, &world.WaitCreated{ResumeAt: time.Now().Add(time.Hour)}))
		// The token is taken: hook_conflict naming the holder's run.
		h3 := testIDs.New(world.PrefixHook)
		res := mustAppend(t, w, b, ev(h3, &world.HookCreated{Token: "tok"}))
		hc, ok := res.Results[0].Event.Data.(*world.HookConflict)
		if !ok || hc.ConflictingRunID != a || res.Results[0].Hook != nil {
			t.Fatalf("clashing hook_created: %+v", res.Results[0])
		}
		if got, err := w.GetHookByToken(ctx, &world.GetHookByTokenParams{Token: "tok"}); err != nil || got.HookID != h1 {
			t.Fatalf("GetHookByToken: %+v, %v", got, err)
		}
		// A hook of run a cannot be disposed through run b.
		_, err := w.Append(ctx, &world.AppendParams{RunID: b, Events: []world.EventInput{ev(h1, &world.HookDisposed{})}})
		wantErrIs(t, err, world.ErrNotFound, "dispose another run's hook")
		// Disposing frees the token.
		mustAppend(t, w, a, ev(h2, &world.HookDisposed{}))
		if _, err := w.GetHookByToken(ctx, &world.GetHookByTokenParams{Token: "tok2"}); !errors.Is(err, world.ErrNotFound) {
			t.Fatalf("token of a disposed hook: %v", err)
		}
		page, err := w.ListHooks(ctx, &world.ListHooksParams{RunID: a})
		if err != nil || len(page.Items) != 1 || page.Items[0].HookID != h1 {
			t.Fatalf("ListHooks(a): %+v, %v", page, err)
		}
		// Ending the run deletes its hooks (freeing tokens) and waits.
		mustAppend(t, w, a, ev("", &world.RunCancelled{}))
		if _, err := w.GetHook(ctx, &world.GetHookParams{HookID: h1}); !errors.Is(err, world.ErrNotFound) {
			t.Fatalf("hook after run end: %v", err)
		}
		if err := w.s.view(ctx, func(tx kvTx) error {
			wt, err := getWait(tx, a, waitID)
			if err == nil && wt != nil {
				err = fmt.Errorf("stored: %+v", wt)
			}
			return err
		}); err != nil {
			t.Fatalf("wait after run end: %v", err)
		}
		for _, rid := range []string{a, ""} {
			page, err = w.ListHooks(ctx, &world.ListHooksParams{RunID: rid})
			if err != nil || len(page.Items) != 0 {
				t.Fatalf("ListHooks(%q) after run end: %+v, %v", rid, page.Items, err)
			}
		}
		h4 := testIDs.New(world.PrefixHook)
		res = mustAppend(t, w, b, ev(h4, &world.HookCreated{Token: "tok"}))
		if res.Results[0].Hook == nil {
			t.Fatalf("token not freed: %+v", res.Results[0].Event)
		}
		// The conflict and the creation are both in the correlation index.
		for _, corr := range []string{h3, h4} {
			p, err := w.ListEventsByCorrelation(ctx, &world.ListEventsByCorrelationParams{RunID: b, CorrelationID: corr})
			if err != nil || len(p.Items) != 1 {
				t.Fatalf("ListEventsByCorrelation(%s): %+v, %v", corr, p, err)
			}
		}
	})
}

func TestListRunsIndexes(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		clock := newFakeClock()
		cfg := m.config(t)
		w := mustOpen(t, cfg, knobs.WithNow(clock.Now))
		var runs []string
		for i := range 5 {
			clock.Advance(time.Second)
			runs = append(runs, newRun(t, w, []string{"alpha", "beta"}[i%2]))
		}
		mustAppend(t, w, runs[2], ev("", &world.RunCompleted{}))
		ids := func(p *world.ListRunsParams) []string {
			t.Helper()
			var out []string
			for {
				page, err := w.ListRuns(ctx, p)
				if err != nil {
					t.Fatalf("ListRuns: %v", err)
				}
				for _, r := range page.Items {
					out = append(out, r.RunID)
				}
				if len(page.Items) > 0 && page.Cursor == "" {
					t.Fatal("ListRuns: page without cursor")
				}
				if !page.HasMore {
					return out
				}
				p.Cursor = page.Cursor
			}
		}
		r := runs
		cases := []struct {
			p    world.ListRunsParams
			want []string
		}{
			{world.ListRunsParams{}, []string{r[4], r[3], r[2], r[1], r[0]}},
			{world.ListRunsParams{Pagination: world.Pagination{Limit: 2}}, []string{r[4], r[3], r[2], r[1], r[0]}},
			{world.ListRunsParams{WorkflowName: "alpha"}, []string{r[4], r[2], r[0]}},
			{world.ListRunsParams{Status: world.RunStatusRunning, Pagination: world.Pagination{Limit: 1}}, []string{r[4], r[3], r[1], r[0]}},
			{world.ListRunsParams{Status: world.RunStatusCompleted}, []string{r[2]}},
			{world.ListRunsParams{WorkflowName: "alpha", Status: world.RunStatusRunning}, []string{r[4], r[0]}},
			{world.ListRunsParams{WorkflowName: "beta", Status: world.RunStatusCompleted}, nil},
			{world.ListRunsParams{Status: world.RunStatusPending}, nil},
		}
		for _, c := range cases {
			if got := ids(&c.p); !slices.Equal(got, c.want) {
				t.Errorf("ListRuns(%+v) = %v, want %v", c.p, got, c.want)
			}
		}
		_, err := w.ListRuns(ctx, &world.ListRunsParams{Status: "bogus"})
		wantErrIs(t, err, world.ErrInvalid, "unknown status")
	})
}

func TestCursors(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		w := mustOpen(t, m.config(t))
		a, b := newRun(t, w, "wf"), newRun(t, w, "wf")
		p, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: a})
		if err != nil || len(p.Items) != 2 || p.HasMore || p.Cursor == "" {
			t.Fatalf("last page: %+v, %v", p, err)
		}
		// Resuming from the last page's cursor returns what was appended since.
		mustAppend(t, w, a, ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: "s"}))
		p2, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: a, Pagination: world.Pagination{Cursor: p.Cursor}})
		if err != nil || len(p2.Items) != 1 || p2.Items[0].Seq != 3 {
			t.Fatalf("resume: %+v, %v", p2, err)
		}
		// Descending.
		p3, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: a, Pagination: world.Pagination{Descending: true, Limit: 2}})
		if err != nil || len(p3.Items) != 2 || p3.Items[0].Seq != 3 || !p3.HasMore {
			t.Fatalf("descending: %+v, %v", p3, err)
		}
		p4, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: a, Pagination: world.Pagination{Descending: true, Cursor: p3.Cursor}})
		if err != nil || len(p4.Items) != 1 || p4.Items[0].Seq != 1 || p4.HasMore {
			t.Fatalf("descending page 2: %+v, %v", p4, err)
		}
		// A cursor of another run's listing, or of another listing, is invalid.
		_, err = w.ListEvents(ctx, &world.ListEventsParams{RunID: b, Pagination: world.Pagination{Cursor: p.Cursor}})
		wantErrIs(t, err, world.ErrInvalid, "foreign run's cursor")
		_, err = w.ListSteps(ctx, &world.ListStepsParams{RunID: a, Pagination: world.Pagination{Cursor: p.Cursor}})
		wantErrIs(t, err, world.ErrInvalid, "events cursor on steps")
		_, err = w.ListRuns(ctx, &world.ListRunsParams{Pagination: world.Pagination{Cursor: "garbage"}})
		wantErrIs(t, err, world.ErrInvalid, "garbage cursor")
		// An empty page has no cursor.
		empty, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: testIDs.New(world.PrefixRun)})
		if err != nil || len(empty.Items) != 0 || empty.Cursor != "" || empty.HasMore {
			t.Fatalf("unknown run: %+v, %v", empty, err)
		}
	})
}

func TestListStepsCreationOrder(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		w := mustOpen(t, m.config(t))
		runID := newRun(t, w, "wf")
		// IDs minted in one order, created in the reverse one.
		ids := []string{testIDs.New(world.PrefixStep), testIDs.New(world.PrefixStep), testIDs.New(world.PrefixStep)}
		mustAppend(t, w, runID, ev(ids[2], &world.StepCreated{StepName: "c"}), ev(ids[1], &world.StepCreated{StepName: "b"}))
		mustAppend(t, w, runID, ev(ids[0], &world.StepCreated{StepName: "a"}))
		var got []string
		cursor := ""
		for {
			p, err := w.ListSteps(ctx, &world.ListStepsParams{RunID: runID, Pagination: world.Pagination{Limit: 1, Cursor: cursor}})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range p.Items {
				got = append(got, s.StepName)
			}
			if !p.HasMore {
				break
			}
			cursor = p.Cursor
		}
		if !slices.Equal(got, []string{"c", "b", "a"}) {
			t.Fatalf("ListSteps order = %v", got)
		}
	})
}

func TestCorruptRecordIsReported(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		w := mustOpen(t, m.config(t))
		runID := newRun(t, w, "wf")
		// An event of a type this version does not know, and a run record
		// that is not JSON.
		err := w.s.kv.update(func(tx kvTx) error {
			if err := tx.put(bEvents, eventKey(runID, 3), []byte(`{"runId":"x","seq":3,"eventType":"run_exploded"}`)); err != nil {
				return err
			}
			return tx.put(bRuns, runKey("wrun_bad"), []byte(`{not json`))
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.ListEvents(ctx, &world.ListEventsParams{RunID: runID})
		wantErrIs(t, err, ErrCorrupt, "unknown stored event type")
		if world.Status(err) != 500 {
			t.Errorf("corrupt record status = %d, want 500", world.Status(err))
		}
		_, err = w.GetRun(ctx, &world.GetRunParams{RunID: "wrun_bad"})
		wantErrIs(t, err, ErrCorrupt, "undecodable run")
	})
}

func TestRunIdempotencyKey(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		w := mustOpen(t, m.config(t))
		first := testIDs.New(world.PrefixRun)
		mustAppend(t, w, first, ev("", &world.RunCreated{WorkflowName: "wf", IdempotencyKey: "order-1"}))
		_, err := w.Append(ctx, &world.AppendParams{RunID: testIDs.New(world.PrefixRun), Events: []world.EventInput{
			ev("", &world.RunCreated{WorkflowName: "wf", IdempotencyKey: "order-1"}),
		}})
		var re *world.RefusalError
		if !errors.As(err, &re) || re.Kind != world.ErrConflict || re.Entity != first || re.Key != "order-1" {
			t.Fatalf("second run with the key: %v", err)
		}
	})
}

func TestReopenKeepsEverything(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := mode{durable: true}.config(t)
	w, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runID := newRun(t, w, "wf")
	hookID := testIDs.New(world.PrefixHook)
	mustAppend(t, w, runID, ev(hookID, &world.HookCreated{Token: "persist"}))
	if err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: runID, Name: "out", Chunks: [][]byte{[]byte("a")}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.GetRun(ctx, &world.GetRunParams{RunID: runID}); !errors.Is(err, world.ErrClosed) {
		t.Fatalf("GetRun after Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	w = mustOpen(t, cfg)
	if got := allEvents(t, w, runID); len(got) != 3 {
		t.Fatalf("after reopen: %d events", len(got))
	}
	if h, err := w.GetHookByToken(ctx, &world.GetHookByTokenParams{Token: "persist"}); err != nil || h.HookID != hookID {
		t.Fatalf("hook after reopen: %+v, %v", h, err)
	}
	info, err := w.StreamInfo(ctx, &world.StreamInfoParams{RunID: runID, Name: "out"})
	if err != nil || info.TailIndex != 0 {
		t.Fatalf("stream after reopen: %+v, %v", info, err)
	}
}
