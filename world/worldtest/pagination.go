package worldtest

import (
	"encoding/base64"
	"slices"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func paginationCases() []testCase {
	return []testCase{
		{"events_cursor_on_every_page", testPageEvents},
		{"events_resume_after_append", testPageEventsResume},
		{"events_descending", testPageEventsDescending},
		{"empty_page_empty_cursor", testPageEmpty},
		{"invalid_cursor", testPageInvalidCursor},
		{"runs_newest_first_filtered", testPageRuns},
		{"steps_in_creation_order", testPageSteps},
		{"hooks_all_and_by_run", testPageHooks},
		{"events_by_correlation", testPageEventsByCorrelation},
		{"events_by_correlation_long", testPageEventsByCorrelationLong},
	}
}

// readAll reads a listing page by page with the given limit and checks the
// paging contract: at most limit items a page, a cursor on every non-empty
// page (the last included), HasMore false only on the last page, and after the
// last page an empty page with an empty cursor. It returns the items and the
// last non-empty page's cursor.
func readAll[T any](t *testing.T, what string, limit int, list func(world.Pagination) (*world.Page[T], error)) ([]T, string) {
	t.Helper()
	var items []T
	cursor, last := "", ""
	for i := 1; ; i++ {
		if i > 1000 {
			t.Fatalf("%s: more than 1000 pages", what)
		}
		p, err := list(world.Pagination{Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("%s: page %d: %v", what, i, err)
		}
		if len(p.Items) > limit {
			t.Fatalf("%s: page %d has %d items, over the limit %d", what, i, len(p.Items), limit)
		}
		if len(p.Items) == 0 {
			if i > 1 {
				t.Fatalf("%s: page %d is empty although page %d said HasMore", what, i, i-1)
			}
			if p.Cursor != "" || p.HasMore {
				t.Fatalf("%s: an empty first page has cursor %q and HasMore %v, want neither", what, p.Cursor, p.HasMore)
			}
			return nil, ""
		}
		if p.Cursor == "" {
			t.Fatalf("%s: non-empty page %d (%d items, HasMore %v) has no cursor; every non-empty page, the last included, must have one", what, i, len(p.Items), p.HasMore)
		}
		items = append(items, p.Items...)
		cursor, last = p.Cursor, p.Cursor
		if p.HasMore {
			continue
		}
		after, err := list(world.Pagination{Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("%s: the page after the last one (from its cursor): %v", what, err)
		}
		if len(after.Items) != 0 || after.Cursor != "" || after.HasMore {
			t.Fatalf("%s: the page after the last one has %d items, cursor %q, HasMore %v; want an empty page with an empty cursor", what, len(after.Items), after.Cursor, after.HasMore)
		}
		return items, last
	}
}

func (f *fixture) listEvents(run string, desc bool) func(world.Pagination) (*world.Page[world.Event], error) {
	return func(p world.Pagination) (*world.Page[world.Event], error) {
		p.Descending = desc
		return f.w.ListEvents(f.ctx, &world.ListEventsParams{RunID: run, Pagination: p})
	}
}

// runWithEvents creates a running run with n events in all.
func (f *fixture) runWithEvents(n int) string {
	f.t.Helper()
	run := f.startedRun()
	for range n - 2 {
		f.createWait(run, time.Now().Add(time.Hour))
	}
	return run
}

func seqs(evs []world.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func seqRange(from, to int64) []int64 {
	var out []int64
	if from <= to {
		for s := from; s <= to; s++ {
			out = append(out, s)
		}
		return out
	}
	for s := from; s >= to; s-- {
		out = append(out, s)
	}
	return out
}

func testPageEvents(t *testing.T, f *fixture) {
	run := f.runWithEvents(8)
	for _, limit := range []int{1, 3, 4, 8, 100} {
		got, _ := readAll(t, "ListEvents", limit, f.listEvents(run, false))
		if !slices.Equal(seqs(got), seqRange(1, 8)) {
			t.Fatalf("ListEvents with limit %d: sequence numbers %v, want 1..8 in order", limit, seqs(got))
		}
	}
	p, err := f.w.ListEvents(f.ctx, &world.ListEventsParams{RunID: run, Pagination: world.Pagination{Limit: 3}})
	if err != nil || len(p.Items) != 3 || !p.HasMore {
		t.Fatalf("ListEvents limit 3 of 8: %d items HasMore %v err %v; want 3 and HasMore", len(p.Items), p.HasMore, err)
	}
}

func testPageEventsResume(t *testing.T, f *fixture) {
	run := f.runWithEvents(5)
	got, last := readAll(t, "ListEvents", 2, f.listEvents(run, false))
	if len(got) != 5 {
		t.Fatalf("ListEvents: %d events, want 5", len(got))
	}
	w1 := f.createWait(run, time.Now())
	w2 := f.createWait(run, time.Now())
	p, err := f.w.ListEvents(f.ctx, &world.ListEventsParams{RunID: run, Pagination: world.Pagination{Limit: 10, Cursor: last}})
	if err != nil {
		t.Fatalf("ListEvents from the last page's cursor: %v", err)
	}
	if !slices.Equal(seqs(p.Items), []int64{6, 7}) || p.Items[0].CorrelationID != w1 || p.Items[1].CorrelationID != w2 {
		t.Fatalf("ListEvents from the last page's cursor after 2 appends: got seqs %v, want exactly the new events 6 and 7", seqs(p.Items))
	}
	if p.Cursor == "" || p.HasMore {
		t.Fatalf("the resumed page: cursor %q HasMore %v, want a cursor and no more", p.Cursor, p.HasMore)
	}
	// And again from the resumed page's cursor.
	f.createWait(run, time.Now())
	q, err := f.w.ListEvents(f.ctx, &world.ListEventsParams{RunID: run, Pagination: world.Pagination{Cursor: p.Cursor}})
	if err != nil || !slices.Equal(seqs(q.Items), []int64{8}) {
		t.Fatalf("ListEvents resumed twice: seqs %v err %v, want [8]", seqs(q.Items), err)
	}
}

func testPageEventsDescending(t *testing.T, f *fixture) {
	run := f.runWithEvents(7)
	for _, limit := range []int{1, 3, 100} {
		got, _ := readAll(t, "ListEvents descending", limit, f.listEvents(run, true))
		if !slices.Equal(seqs(got), seqRange(7, 1)) {
			t.Fatalf("ListEvents descending with limit %d: sequence numbers %v, want 7..1", limit, seqs(got))
		}
	}
}

func testPageEmpty(t *testing.T, f *fixture) {
	run := f.startedRun()
	steps, err := f.w.ListSteps(f.ctx, &world.ListStepsParams{RunID: run})
	if err != nil || len(steps.Items) != 0 || steps.Cursor != "" || steps.HasMore {
		t.Fatalf("ListSteps of a run without steps: %+v, %v; want an empty page with an empty cursor", steps, err)
	}
	hooks, err := f.w.ListHooks(f.ctx, &world.ListHooksParams{RunID: run})
	if err != nil || len(hooks.Items) != 0 || hooks.Cursor != "" || hooks.HasMore {
		t.Fatalf("ListHooks of a run without hooks: %+v, %v; want an empty page with an empty cursor", hooks, err)
	}
	evs, err := f.w.ListEventsByCorrelation(f.ctx, &world.ListEventsByCorrelationParams{RunID: run, CorrelationID: ids.New(world.PrefixStep)})
	if err != nil || len(evs.Items) != 0 || evs.Cursor != "" || evs.HasMore {
		t.Fatalf("ListEventsByCorrelation of an unknown step: %+v, %v; want an empty page with an empty cursor", evs, err)
	}
	runs, err := f.w.ListRuns(f.ctx, &world.ListRunsParams{WorkflowName: "no-such-workflow"})
	if err != nil || len(runs.Items) != 0 || runs.Cursor != "" || runs.HasMore {
		t.Fatalf("ListRuns of an unknown workflow: %+v, %v; want an empty page with an empty cursor", runs, err)
	}
}

func testPageInvalidCursor(t *testing.T, f *fixture) {
	runA, runB := f.runWithEvents(4), f.runWithEvents(4)
	step := f.createStep(runA)
	f.createStep(runA)
	f.mustCreateHook(runA, token())
	f.mustCreateHook(runA, token())
	page1 := world.Pagination{Limit: 1}
	evA, err := f.w.ListEvents(f.ctx, &world.ListEventsParams{RunID: runA, Pagination: page1})
	if err != nil || evA.Cursor == "" {
		t.Fatalf("ListEvents limit 1: %+v, %v", evA, err)
	}
	runs, err := f.w.ListRuns(f.ctx, &world.ListRunsParams{Pagination: page1})
	if err != nil || runs.Cursor == "" {
		t.Fatalf("ListRuns limit 1: %+v, %v", runs, err)
	}
	steps, err := f.w.ListSteps(f.ctx, &world.ListStepsParams{RunID: runA, Pagination: page1})
	if err != nil || steps.Cursor == "" {
		t.Fatalf("ListSteps limit 1: %+v, %v", steps, err)
	}
	hooks, err := f.w.ListHooks(f.ctx, &world.ListHooksParams{Pagination: page1})
	if err != nil || hooks.Cursor == "" {
		t.Fatalf("ListHooks limit 1: %+v, %v", hooks, err)
	}
	garbage := []string{"not a cursor!", base64.RawURLEncoding.EncodeToString([]byte("not json")), "e30", world.EncodeCursor("nonsense", 1)}
	type call struct {
		name   string
		cursor string
		list   func(cursor string) error
	}
	listEvents := func(run string) func(string) error {
		return func(c string) error {
			_, err := f.w.ListEvents(f.ctx, &world.ListEventsParams{RunID: run, Pagination: world.Pagination{Cursor: c}})
			return err
		}
	}
	listSteps := func(c string) error {
		_, err := f.w.ListSteps(f.ctx, &world.ListStepsParams{RunID: runA, Pagination: world.Pagination{Cursor: c}})
		return err
	}
	listRuns := func(c string) error {
		_, err := f.w.ListRuns(f.ctx, &world.ListRunsParams{Pagination: world.Pagination{Cursor: c}})
		return err
	}
	listHooks := func(c string) error {
		_, err := f.w.ListHooks(f.ctx, &world.ListHooksParams{Pagination: world.Pagination{Cursor: c}})
		return err
	}
	listByCorr := func(c string) error {
		_, err := f.w.ListEventsByCorrelation(f.ctx, &world.ListEventsByCorrelationParams{RunID: runA, CorrelationID: step, Pagination: world.Pagination{Cursor: c}})
		return err
	}
	calls := []call{
		{"an events cursor of another run given to ListEvents", evA.Cursor, listEvents(runB)},
		{"a runs cursor given to ListEvents", runs.Cursor, listEvents(runA)},
		{"a steps cursor given to ListEvents", steps.Cursor, listEvents(runA)},
		{"an events cursor given to ListSteps", evA.Cursor, listSteps},
		{"an events cursor given to ListRuns", evA.Cursor, listRuns},
		{"a runs cursor given to ListHooks", runs.Cursor, listHooks},
		{"a hooks cursor given to ListRuns", hooks.Cursor, listRuns},
		{"a runs cursor given to ListEventsByCorrelation", runs.Cursor, listByCorr},
	}
	for i, g := range garbage {
		for _, l := range []struct {
			name string
			fn   func(string) error
		}{{"ListEvents", listEvents(runA)}, {"ListSteps", listSteps}, {"ListRuns", listRuns}, {"ListHooks", listHooks}, {"ListEventsByCorrelation", listByCorr}} {
			calls = append(calls, call{"malformed cursor #" + string(rune('1'+i)) + " given to " + l.name, g, l.fn})
		}
	}
	for _, c := range calls {
		wantErr(t, c.list(c.cursor), world.ErrInvalid, "%s (%q)", c.name, c.cursor)
	}
}

func testPageRuns(t *testing.T, f *fixture) {
	const wfA, wfB = "worldtest-a", "worldtest-b"
	type spec struct {
		wf     string
		status world.RunStatus
	}
	specs := []spec{
		{wfA, world.RunStatusPending}, {wfB, world.RunStatusRunning}, {wfA, world.RunStatusRunning},
		{wfB, world.RunStatusFailed}, {wfA, world.RunStatusCompleted}, {wfB, world.RunStatusPending},
		{wfA, world.RunStatusRunning}, {wfA, world.RunStatusCancelled},
	}
	created := make([]string, len(specs)) // in creation order
	for i, s := range specs {
		id := f.createRun(s.wf)
		switch s.status {
		case world.RunStatusRunning:
			f.mustAppend(id, ev("", &world.RunStarted{}))
		case world.RunStatusCompleted:
			f.endRun(id, world.EventRunCompleted)
		case world.RunStatusFailed:
			f.endRun(id, world.EventRunFailed)
		case world.RunStatusCancelled:
			f.endRun(id, world.EventRunCancelled)
		}
		created[i] = id
	}
	want := func(wf string, st world.RunStatus) []string {
		var out []string
		for i := len(specs) - 1; i >= 0; i-- {
			if (wf == "" || specs[i].wf == wf) && (st == "" || specs[i].status == st) {
				out = append(out, created[i])
			}
		}
		return out
	}
	for _, tc := range []struct {
		wf string
		st world.RunStatus
	}{
		{"", ""}, {wfA, ""}, {wfB, ""}, {"", world.RunStatusRunning}, {"", world.RunStatusPending},
		{wfA, world.RunStatusRunning}, {wfB, world.RunStatusFailed}, {wfB, world.RunStatusCompleted},
	} {
		for _, limit := range []int{2, 100} {
			got, _ := readAll(t, "ListRuns", limit, func(p world.Pagination) (*world.Page[world.Run], error) {
				return f.w.ListRuns(f.ctx, &world.ListRunsParams{WorkflowName: tc.wf, Status: tc.st, Pagination: p})
			})
			var gotIDs []string
			for _, r := range got {
				gotIDs = append(gotIDs, r.RunID)
				if (tc.wf != "" && r.WorkflowName != tc.wf) || (tc.st != "" && r.Status != tc.st) {
					t.Fatalf("ListRuns(workflow %q, status %q) returned run %s of %q in %q", tc.wf, tc.st, r.RunID, r.WorkflowName, r.Status)
				}
			}
			if w := want(tc.wf, tc.st); !slices.Equal(gotIDs, w) {
				t.Fatalf("ListRuns(workflow %q, status %q, limit %d): got %v, want newest first %v", tc.wf, tc.st, limit, gotIDs, w)
			}
		}
	}
}

func testPageSteps(t *testing.T, f *fixture) {
	run, other := f.startedRun(), f.startedRun()
	var want []string
	for range 5 {
		want = append(want, f.createStep(run))
		f.createStep(other)
	}
	f.startStep(run, want[2], time.Minute)
	got, _ := readAll(t, "ListSteps", 2, func(p world.Pagination) (*world.Page[world.Step], error) {
		return f.w.ListSteps(f.ctx, &world.ListStepsParams{RunID: run, Pagination: p})
	})
	var gotIDs []string
	for _, s := range got {
		gotIDs = append(gotIDs, s.StepID)
	}
	if !slices.Equal(gotIDs, want) {
		t.Fatalf("ListSteps: got %v, want the run's steps in creation order %v", gotIDs, want)
	}
	if got[2].Status != world.StepStatusRunning || got[2].Attempt != 1 {
		t.Fatalf("ListSteps: step 2 is %q attempt %d, want running attempt 1", got[2].Status, got[2].Attempt)
	}
}

func testPageHooks(t *testing.T, f *fixture) {
	runA, runB := f.startedRun(), f.startedRun()
	a1, b1 := f.mustCreateHook(runA, token()), f.mustCreateHook(runB, token())
	a2, b2 := f.mustCreateHook(runA, token()), f.mustCreateHook(runB, token())
	gone := f.mustCreateHook(runA, token())
	a3 := f.mustCreateHook(runA, token())
	f.mustAppend(runA, ev(gone, &world.HookDisposed{}))
	hookIDs := func(run string) []string {
		got, _ := readAll(t, "ListHooks("+run+")", 2, func(p world.Pagination) (*world.Page[world.Hook], error) {
			return f.w.ListHooks(f.ctx, &world.ListHooksParams{RunID: run, Pagination: p})
		})
		var out []string
		for _, h := range got {
			out = append(out, h.HookID)
		}
		return out
	}
	if got, want := hookIDs(""), []string{a1, b1, a2, b2, a3}; !slices.Equal(got, want) {
		t.Fatalf("ListHooks(all): got %v, want the active hooks in creation order %v", got, want)
	}
	if got, want := hookIDs(runA), []string{a1, a2, a3}; !slices.Equal(got, want) {
		t.Fatalf("ListHooks(run A): got %v, want %v", got, want)
	}
	if got, want := hookIDs(runB), []string{b1, b2}; !slices.Equal(got, want) {
		t.Fatalf("ListHooks(run B): got %v, want %v", got, want)
	}
}

func testPageEventsByCorrelation(t *testing.T, f *fixture) {
	run := f.startedRun()
	s, other := f.createStep(run), f.createStep(run)
	f.startStep(run, s, time.Minute)
	f.startStep(run, other, time.Minute)
	f.mustAppend(run, ev(s, &world.StepRetrying{Error: stepError("x")}))
	f.startStep(run, s, time.Minute)
	f.mustAppend(run, ev(other, &world.StepCompleted{}))
	f.mustAppend(run, ev(s, &world.StepCompleted{}))
	got, last := readAll(t, "ListEventsByCorrelation", 2, func(p world.Pagination) (*world.Page[world.Event], error) {
		return f.w.ListEventsByCorrelation(f.ctx, &world.ListEventsByCorrelationParams{RunID: run, CorrelationID: s, Pagination: p})
	})
	want := []world.EventType{world.EventStepCreated, world.EventStepStarted, world.EventStepRetrying, world.EventStepStarted, world.EventStepCompleted}
	if len(got) != len(want) {
		t.Fatalf("ListEventsByCorrelation: %d events, want %d", len(got), len(want))
	}
	for i, e := range got {
		if e.CorrelationID != s || e.Type() != want[i] || (i > 0 && e.Seq <= got[i-1].Seq) {
			t.Fatalf("ListEventsByCorrelation event %d: %s %s Seq %d, want %s of %s in sequence order", i, e.Type(), e.CorrelationID, e.Seq, want[i], s)
		}
	}
	// Resuming from the last page's cursor yields only the entity's new events.
	f.mustAppend(run, ev(f.createStep(run), &world.StepStarted{}))
	hook := f.mustCreateHook(run, token())
	f.mustAppend(run, ev(hook, &world.HookReceived{}))
	p, err := f.w.ListEventsByCorrelation(f.ctx, &world.ListEventsByCorrelationParams{RunID: run, CorrelationID: s, Pagination: world.Pagination{Cursor: last}})
	if err != nil || len(p.Items) != 0 {
		t.Fatalf("ListEventsByCorrelation resumed after other entities' events: %d items, %v; want none", len(p.Items), err)
	}
	hp, err := f.w.ListEventsByCorrelation(f.ctx, &world.ListEventsByCorrelationParams{RunID: run, CorrelationID: hook})
	if err != nil || len(hp.Items) != 2 || hp.Items[1].Type() != world.EventHookReceived {
		t.Fatalf("ListEventsByCorrelation of a hook: %+v, %v; want hook_created and hook_received", hp, err)
	}
}

// testPageEventsByCorrelationLong: a step with many events (a World may keep
// its events in groups) among another step's, in two runs, listed in
// both orders at several page sizes, then resumed after more of them.
func testPageEventsByCorrelationLong(t *testing.T, f *fixture) {
	runs := []string{f.startedRun(), f.startedRun()}
	steps := map[string]string{}
	want := map[string][]int64{}
	add := func(run string, evs ...world.EventInput) {
		res := f.mustAppend(run, evs...)
		for i, e := range evs {
			if e.CorrelationID == steps[run] && res.Results[i].Event != nil {
				want[run] = append(want[run], res.Results[i].Event.Seq)
			}
		}
	}
	for _, run := range runs {
		steps[run] = ids.New(world.PrefixStep)
		add(run, ev(steps[run], &world.StepCreated{StepName: "worldtest-step"}))
	}
	for i := range 12 {
		for _, run := range runs {
			other := f.createStep(run)
			add(run, ev(steps[run], &world.StepStarted{LeaseTTL: time.Minute}), ev(other, &world.StepStarted{LeaseTTL: time.Minute}))
			if i%4 == 0 {
				add(run, ev(other, &world.StepCompleted{}))
			}
			add(run, ev(steps[run], &world.StepRetrying{Error: stepError("again")}))
		}
	}
	seqs := func(evs []world.Event) []int64 {
		var out []int64
		for _, e := range evs {
			out = append(out, e.Seq)
		}
		return out
	}
	for _, run := range runs {
		for _, limit := range []int{1, 2, 3, 5, 7, 100} {
			list := func(desc bool) func(world.Pagination) (*world.Page[world.Event], error) {
				return func(p world.Pagination) (*world.Page[world.Event], error) {
					p.Descending = desc
					return f.w.ListEventsByCorrelation(f.ctx, &world.ListEventsByCorrelationParams{RunID: run, CorrelationID: steps[run], Pagination: p})
				}
			}
			got, _ := readAll(t, "ListEventsByCorrelation", limit, list(false))
			if !slices.Equal(seqs(got), want[run]) {
				t.Fatalf("ListEventsByCorrelation, limit %d: events %v, want %v", limit, seqs(got), want[run])
			}
			got, _ = readAll(t, "ListEventsByCorrelation descending", limit, list(true))
			rev := slices.Clone(want[run])
			slices.Reverse(rev)
			if !slices.Equal(seqs(got), rev) {
				t.Fatalf("ListEventsByCorrelation descending, limit %d: events %v, want %v", limit, seqs(got), rev)
			}
		}
	}
	// Resuming from the last cursor yields exactly the step's new events.
	run := runs[0]
	_, last := readAll(t, "ListEventsByCorrelation", 4, func(p world.Pagination) (*world.Page[world.Event], error) {
		return f.w.ListEventsByCorrelation(f.ctx, &world.ListEventsByCorrelationParams{RunID: run, CorrelationID: steps[run], Pagination: p})
	})
	before := len(want[run])
	add(run, ev(steps[run], &world.StepStarted{LeaseTTL: time.Minute}), ev(f.createStep(run), &world.StepStarted{}))
	add(run, ev(steps[run], &world.StepCompleted{}))
	p, err := f.w.ListEventsByCorrelation(f.ctx, &world.ListEventsByCorrelationParams{RunID: run, CorrelationID: steps[run], Pagination: world.Pagination{Cursor: last}})
	if err != nil || !slices.Equal(seqs(p.Items), want[run][before:]) {
		t.Fatalf("ListEventsByCorrelation resumed after two more of the step's events: %v, %v; want %v", seqs(p.Items), err, want[run][before:])
	}
}
