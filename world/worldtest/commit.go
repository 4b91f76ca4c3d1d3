package worldtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func commitCases() []testCase {
	cases := []testCase{
		{"serial_step_in_one_commit", testCommitSerialStep},
		{"step_and_run_completion_in_one_commit", testCommitRunCompletion},
		{"create_and_start_run_in_one_commit", testCommitCreateAndStart},
		{"events_see_earlier_events_of_the_commit", testCommitSeesEarlierEvents},
		{"refused_second_event_appends_nothing", testCommitRefusedAppendsNothing},
		{"refused_commit_does_not_end_run", testCommitRefusedKeepsRun},
		{"refusals_name_the_event", testCommitErrorShape},
		{"if_last_seq_fence", testCommitIfLastSeq},
	}
	return append(cases, fitsCases()...)
}

func testCommitSerialStep(t *testing.T, f *fixture) {
	run := f.startedRun()
	k := f.createStep(run)
	f.startStep(run, k, time.Minute)
	last := f.getRun(run).LastSeq
	next := ids.New(world.PrefixStep)
	res := f.mustAppend(run,
		ev(k, &world.StepCompleted{Result: json.RawMessage(`"k"`)}),
		ev(next, &world.StepCreated{StepName: "next", Input: json.RawMessage(`"k"`)}),
		ev(next, &world.StepStarted{LeaseTTL: time.Minute}),
	)
	want := []world.EventType{world.EventStepCompleted, world.EventStepCreated, world.EventStepStarted}
	for i, r := range res.Results {
		if r.Event == nil || r.Event.Type() != want[i] || r.Event.Seq != last+int64(i)+1 {
			t.Fatalf("commit result %d: event %+v, want %s with Seq %d", i, r.Event, want[i], last+int64(i)+1)
		}
	}
	if res.Run.LastSeq != last+3 {
		t.Fatalf("commit: result run LastSeq %d, want %d", res.Run.LastSeq, last+3)
	}
	if s := res.Results[0].Step; s == nil || s.StepID != k || s.Status != world.StepStatusCompleted {
		t.Fatalf("commit result 0: step %+v, want %s completed", s, k)
	}
	if s := res.Results[1].Step; s == nil || s.StepID != next || s.Status != world.StepStatusPending {
		t.Fatalf("commit result 1: step %+v, want %s pending (as step_created left it)", s, next)
	}
	if s := res.Results[2].Step; s == nil || s.StepID != next || s.Status != world.StepStatusRunning || s.Attempt != 1 {
		t.Fatalf("commit result 2: step %+v, want %s running attempt 1", s, next)
	}
	if s := f.getStep(run, k); s.Status != world.StepStatusCompleted {
		t.Fatalf("step k after the commit: %q", s.Status)
	}
	if s := f.getStep(run, next); s.Status != world.StepStatusRunning || s.Attempt != 1 {
		t.Fatalf("step k+1 after the commit: %q attempt %d", s.Status, s.Attempt)
	}
	evs := f.events(run)
	if int64(len(evs)) != last+3 {
		t.Fatalf("log has %d events after the commit, want %d", len(evs), last+3)
	}
	for i, typ := range want {
		if e := evs[last+int64(i)]; e.Type() != typ || e.Seq != last+int64(i)+1 {
			t.Fatalf("log event %d: %s Seq %d, want %s Seq %d", last+int64(i), e.Type(), e.Seq, typ, last+int64(i)+1)
		}
	}
}

func testCommitRunCompletion(t *testing.T, f *fixture) {
	run := f.startedRun()
	k := f.createStep(run)
	f.startStep(run, k, time.Minute)
	tok := token()
	f.mustCreateHook(run, tok)
	wait := f.createWait(run, time.Now().Add(time.Hour))
	res := f.mustAppend(run,
		ev(k, &world.StepCompleted{Result: json.RawMessage(`1`)}),
		ev("", &world.RunCompleted{Output: json.RawMessage(`2`)}),
	)
	if res.Run.Status != world.RunStatusCompleted {
		t.Fatalf("commit ending the run: result run status %q", res.Run.Status)
	}
	if r := f.getRun(run); r.Status != world.RunStatusCompleted || !jsonEqual(r.Output, []byte(`2`)) {
		t.Fatalf("GetRun after the commit: %q output %s", r.Status, r.Output)
	}
	_, err := f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok})
	wantErr(t, err, world.ErrNotFound, "a hook of a run ended inside a multi-event commit")
	f.wantWaitAbsent(run, wait, "a wait of a run ended inside a multi-event commit")
}

func testCommitCreateAndStart(t *testing.T, f *fixture) {
	run := ids.New(world.PrefixRun)
	step := ids.New(world.PrefixStep)
	res := f.mustAppend(run,
		ev("", &world.RunCreated{WorkflowName: testWorkflow}),
		ev("", &world.RunStarted{}),
		ev(step, &world.StepCreated{StepName: "first"}),
	)
	for i, r := range res.Results {
		if r.Event == nil || r.Event.Seq != int64(i+1) {
			t.Fatalf("create-and-start commit result %d: %+v, want Seq %d", i, r.Event, i+1)
		}
	}
	if r := f.getRun(run); r.Status != world.RunStatusRunning || r.LastSeq != 3 {
		t.Fatalf("GetRun after create-and-start: %q LastSeq %d", r.Status, r.LastSeq)
	}
	f.getStep(run, step)
}

func testCommitSeesEarlierEvents(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := ids.New(world.PrefixStep)
	tok := token()
	h1, h2 := ids.New(world.PrefixHook), ids.New(world.PrefixHook)
	h3 := ids.New(world.PrefixHook)
	wait := ids.New(world.PrefixWait)
	res := f.mustAppend(run,
		ev(step, &world.StepCreated{StepName: "s"}),
		ev(step, &world.StepStarted{LeaseTTL: time.Minute}),
		ev(step, &world.StepRetrying{Error: stepError("again")}),
		ev(step, &world.StepStarted{LeaseTTL: time.Minute}),
		ev(h1, &world.HookCreated{Token: tok}),
		ev(h2, &world.HookCreated{Token: tok}),
		ev(wait, &world.WaitCreated{ResumeAt: time.Now()}),
		ev(wait, &world.WaitCompleted{}),
		ev(h1, &world.HookDisposed{}),
		ev(h3, &world.HookCreated{Token: tok}),
	)
	if s := res.Results[3].Step; s == nil || s.Attempt != 2 {
		t.Fatalf("second step_started in one commit: step %+v, want attempt 2", s)
	}
	if e := res.Results[5].Event; e == nil || e.Type() != world.EventHookConflict {
		t.Fatalf("a hook_created on a token claimed earlier in the same commit: got %s, want hook_conflict", eventType(e))
	}
	if d, _ := res.Results[5].Event.Data.(*world.HookConflict); d == nil || d.ConflictingRunID != run {
		t.Fatalf("hook_conflict payload %+v, want conflicting run %s", res.Results[5].Event.Data, run)
	}
	if e := res.Results[9].Event; e == nil || e.Type() != world.EventHookCreated {
		t.Fatalf("a hook_created on a token disposed earlier in the same commit: got %s, want hook_created", eventType(e))
	}
	if s := f.getStep(run, step); s.Attempt != 2 || s.Status != world.StepStatusRunning {
		t.Fatalf("GetStep after the commit: attempt %d %q", s.Attempt, s.Status)
	}
	f.wantWaitCompleted(run, wait, "a wait completed inside a multi-event commit")
	h, err := f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok})
	if err != nil || h.HookID != h3 {
		t.Fatalf("GetHookByToken after the commit: %+v, %v; want %s", h, err, h3)
	}
	for _, id := range []string{h1, h2} {
		_, err := f.w.GetHook(f.ctx, &world.GetHookParams{HookID: id})
		wantErr(t, err, world.ErrNotFound, "GetHook(%s) after the commit", id)
	}
}

func testCommitRefusedAppendsNothing(t *testing.T, f *fixture) {
	run := f.startedRun()
	existing := f.createStep(run)
	before := f.events(run)
	fresh := ids.New(world.PrefixStep)
	_, err := f.append(run,
		ev(fresh, &world.StepCreated{StepName: "fresh"}),
		ev(existing, &world.StepCreated{StepName: "dup"}),
		ev(ids.New(world.PrefixWait), &world.WaitCreated{ResumeAt: time.Now()}),
	)
	ce := wantAs[*world.RefusalError](t, err, "a commit whose second event is a duplicate step_created")
	if ce.Index != 1 {
		t.Fatalf("RefusalError.Index = %d, want 1", ce.Index)
	}
	wantErr(t, err, world.ErrConflict, "the refusal of the second event")
	f.wantLogUnchanged(run, before, "a refused commit")
	_, err = f.w.GetStep(f.ctx, &world.GetStepParams{RunID: run, StepID: fresh})
	wantErr(t, err, world.ErrNotFound, "the step created by the first event of a refused commit")

	// An invalid second event is refused the same way.
	_, err = f.append(run,
		ev(fresh, &world.StepCreated{StepName: "fresh"}),
		ev(ids.New(world.PrefixStep), &world.StepCreated{}),
	)
	ce = wantAs[*world.RefusalError](t, err, "a commit whose second event is invalid")
	if ce.Index != 1 {
		t.Fatalf("RefusalError.Index = %d, want 1", ce.Index)
	}
	wantErr(t, err, world.ErrInvalid, "the invalid second event")
	f.wantLogUnchanged(run, before, "a commit refused as invalid")
	_, err = f.w.GetStep(f.ctx, &world.GetStepParams{RunID: run, StepID: fresh})
	wantErr(t, err, world.ErrNotFound, "the step created by the first event of an invalid commit")

	// The step stays creatable: the refused commit left no trace.
	f.mustAppend(run, ev(fresh, &world.StepCreated{StepName: "fresh"}))
}

func testCommitRefusedKeepsRun(t *testing.T, f *fixture) {
	run := f.startedRun()
	tok := token()
	hook := f.mustCreateHook(run, tok)
	wait := f.createWait(run, time.Now().Add(time.Hour))
	step := f.createStep(run)
	f.startStep(run, step, time.Minute)
	before := f.events(run)
	_, err := f.append(run,
		ev(step, &world.StepCompleted{}),
		ev("", &world.RunCompleted{}),
		ev(ids.New(world.PrefixStep), &world.StepCreated{StepName: "after-end"}),
	)
	ce := wantAs[*world.RefusalError](t, err, "a commit ending the run then creating a step")
	if ce.Index != 2 {
		t.Fatalf("RefusalError.Index = %d, want 2", ce.Index)
	}
	wantErr(t, err, world.ErrConflict, "step_created after run_completed in one commit")
	f.wantLogUnchanged(run, before, "a refused commit that would have ended the run")
	if r := f.getRun(run); r.Status != world.RunStatusRunning {
		t.Fatalf("a refused commit ended the run: %q", r.Status)
	}
	if s := f.getStep(run, step); s.Status != world.StepStatusRunning {
		t.Fatalf("a refused commit completed the step: %q", s.Status)
	}
	h, err := f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok})
	if err != nil || h.HookID != hook {
		t.Fatalf("a refused commit that would have ended the run disposed its hook: %+v, %v", h, err)
	}
	f.completeWait(run, wait) // still waiting
}

func testCommitErrorShape(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := f.createStep(run)
	_, err := f.append(run, ev(step, &world.StepCreated{StepName: "dup"}))
	ce := wantAs[*world.RefusalError](t, err, "a refused single-event commit")
	if ce.Index != 0 {
		t.Fatalf("RefusalError.Index = %d, want 0", ce.Index)
	}
	wantErr(t, err, world.ErrConflict, "a refused single-event commit")
	f.startStep(run, step, time.Minute)
	_, err = f.append(run,
		ev(ids.New(world.PrefixWait), &world.WaitCreated{ResumeAt: time.Now()}),
		ev(step, &world.StepStarted{}),
	)
	ce = wantAs[*world.RefusalError](t, err, "a commit refused by a step lease")
	if ce.Index != 1 {
		t.Fatalf("RefusalError.Index = %d, want 1", ce.Index)
	}
	wantStepLeased(t, err, "a commit refused by a step lease")
}

func testCommitIfLastSeq(t *testing.T, f *fixture) {
	run := f.startedRun()
	last := f.getRun(run).LastSeq
	res, err := f.w.Append(f.ctx, &world.AppendParams{RunID: run, IfLastSeq: last, Events: []world.EventInput{
		ev(ids.New(world.PrefixWait), &world.WaitCreated{ResumeAt: time.Now()}),
	}})
	if err != nil {
		t.Fatalf("Append with IfLastSeq = the current LastSeq %d: %v", last, err)
	}
	if res.Run.LastSeq != last+1 {
		t.Fatalf("fenced append: LastSeq %d, want %d", res.Run.LastSeq, last+1)
	}
	before := f.events(run)
	for _, stale := range []int64{last, last + 5} {
		_, err = f.w.Append(f.ctx, &world.AppendParams{RunID: run, IfLastSeq: stale, Events: []world.EventInput{
			ev(ids.New(world.PrefixWait), &world.WaitCreated{ResumeAt: time.Now()}),
		}})
		wantErr(t, err, world.ErrConflict, "Append with IfLastSeq %d when LastSeq is %d", stale, last+1)
	}
	f.wantLogUnchanged(run, before, "fenced appends with a wrong IfLastSeq")
}
