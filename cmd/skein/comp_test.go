package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/timeline"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// compStore is a store, written bypassing any worker, with a failed run
// whose end asked for compensation (charge compensated after a retry,
// reserve's compensation failed for good, ship failed and owes none), a
// cancelled run whose one compensation is still owed, a completed run
// without any, and a completed run whose compensable step was kept. It stays open for the test to append more (add).
type compStore struct {
	db                         string
	failed, owing, plain, kept string
	owingStep                  string
	add                        func(runID string, evs ...world.EventInput)
}

func newCompStore(t *testing.T) *compStore {
	t.Helper()
	s := &compStore{db: filepath.Join(t.TempDir(), "skein.db")}
	w, err := localworld.Open(localworld.Config{Path: s.db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	ids := world.NewIDSource(time.Now, nil)
	s.add = func(runID string, evs ...world.EventInput) {
		t.Helper()
		for _, ev := range evs {
			if _, err := w.Append(context.Background(), &world.AppendParams{RunID: runID, Events: []world.EventInput{ev}}); err != nil {
				t.Fatalf("append %s: %v", ev.Type(), err)
			}
		}
	}
	in := func(corr string, d world.EventData) world.EventInput {
		return world.EventInput{CorrelationID: corr, Data: d}
	}
	start := func(name string) string {
		id := ids.New(world.PrefixRun)
		s.add(id, in("", &world.RunCreated{WorkflowName: name}), in("", &world.RunStarted{}))
		return id
	}
	done := func(runID, name, comp string) string {
		id := ids.New(world.PrefixStep)
		s.add(runID, in(id, &world.StepCreated{StepName: name, Compensation: comp}), in(id, &world.StepStarted{Attempt: 1}),
			in(id, &world.StepCompleted{Result: []byte(`1`)}))
		return id
	}
	s.failed = start("order")
	charge, reserve := done(s.failed, "charge", "refund"), done(s.failed, "reserve", "release")
	ship := ids.New(world.PrefixStep)
	s.add(s.failed, in(ship, &world.StepCreated{StepName: "ship"}), in(ship, &world.StepStarted{Attempt: 1}),
		in(ship, &world.StepFailed{Error: &world.ErrorData{Message: "no truck"}}),
		in("", &world.RunFailed{ErrorCode: world.CodeUserError, Error: &world.ErrorData{Message: "no truck"}, Compensate: true}),
		in(reserve, &world.CompStarted{}), in(reserve, &world.CompFailed{Error: &world.ErrorData{Message: "warehouse gone"}}),
		in(charge, &world.CompStarted{}), in(charge, &world.CompRetryScheduled{Error: &world.ErrorData{Message: "bank down"}}),
		in(charge, &world.CompStarted{}), in(charge, &world.CompSucceeded{}),
		in("", &world.RunDeactivated{}))
	s.owing = start("order")
	s.owingStep = done(s.owing, "charge", "refund")
	s.add(s.owing, in("", &world.RunCancelled{Reason: "customer called", Compensate: true}))
	s.plain = start("order")
	s.add(s.plain, in("", &world.RunCompleted{Output: []byte(`1`)}))
	s.kept = start("order")
	done(s.kept, "charge", "refund")
	s.add(s.kept, in("", &world.RunCompleted{Output: []byte(`1`)}))
	return s
}

// TestCompensationCLI: runs list marks a run whose compensation failed and
// one still compensating (the -status filter unchanged); runs show gives
// the run's compensation counts, each step's compensation and the
// compensations' timeline rows; runs watch prints comp_* events readably.
func TestCompensationCLI(t *testing.T) {
	t.Parallel()
	s := newCompStore(t)
	for _, tc := range []struct {
		name      string
		args      []string
		want, not []string
	}{
		{"list", []string{"runs", "list"}, []string{
			s.failed + "  order     -        failed (compensation failed)",
			s.owing + "  order     -        cancelled (compensating)",
			s.plain + "  order     -        completed ",
			s.kept + "  order     -        completed ",
		}, nil},
		{"list -status", []string{"runs", "list", "-status", "failed"}, []string{s.failed, "failed (compensation failed)"}, []string{s.owing, s.plain}},
		{"show failed", []string{"runs", "show", s.failed, "-no-color"}, []string{
			"Compensate 1 succeeded, 1 failed (asked for by the run's failure)",
			"Compensations\n",
			"charge  undo refund  compensated  2 attempts\n",
			"reserve  undo release  compensation_failed  1 attempt  warehouse gone\n",
			"undo reserve: release", "undo charge: refund",
		}, []string{"ship  undo"}},
		{"show owing", []string{"runs", "show", s.owing, "-no-color"}, []string{
			"Compensate 1 owed (asked for by the cancellation)",
			"At rest    not yet: compensations are still to run",
			s.owingStep + " charge  undo refund  not started\n",
		}, nil},
		{"show plain", []string{"runs", "show", s.plain, "-no-color"}, nil, []string{"Compensat"}},
		{"show kept", []string{"runs", "show", s.kept, "-no-color"}, []string{"charge  undo refund  not run\n"}, []string{"Compensate ", "owed"}},
		{"watch", []string{"runs", "watch", s.failed}, []string{
			"step_created     ", "charge (undo: refund)",
			"comp_started", "undo reserve with release attempt 1\n",
			"comp_failed", "could not undo reserve: warehouse gone\n",
			"comp_retry_scheduled", "bank down\n",
			"undo charge with refund attempt 2\n",
			"comp_succeeded", "undid charge\n",
		}, nil},
		{"events", []string{"runs", "events", s.failed}, []string{
			`"eventType":"step_created"`, `"compensation":"refund"`,
			`"eventType":"comp_started"`, `"eventType":"comp_retry_scheduled"`, `"eventType":"comp_succeeded"`,
			`"eventType":"comp_failed"`, `"message":"warehouse gone"`,
		}, nil},
		{"watch -snapshot", []string{"runs", "watch", s.failed, "-snapshot"}, []string{
			"charge compensated (attempt 1), undo refund (attempt 2)",
			"reserve compensation_failed (attempt 1), undo release (attempt 1)",
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := cli(append([]string{"-db", s.db}, tc.args...)...)
			r.expect(t, 0, tc.want...)
			for _, n := range tc.not {
				if strings.Contains(r.out, n) {
					t.Errorf("output has %q:\n%s", n, r.out)
				}
			}
		})
	}
}

// TestRunsWatchFollowsCompensations: a run whose end asked for
// compensation is watched past its end until its compensations end.
func TestRunsWatchFollowsCompensations(t *testing.T) {
	t.Parallel()
	s := newCompStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runWith(ctx, &env{stdout: &out, stderr: &errb}, []string{"-db", s.db, "runs", "watch", s.owing})
	}()
	waitOutput(ctx, t, &out, "run_cancelled")
	select {
	case code := <-done:
		t.Fatalf("runs watch ended (exit %d) before the run's compensation:\n%s", code, out.String())
	case <-time.After(3 * compPoll):
	}
	s.add(s.owing, world.EventInput{CorrelationID: s.owingStep, Data: &world.CompStarted{}},
		world.EventInput{CorrelationID: s.owingStep, Data: &world.CompSucceeded{}},
		world.EventInput{Data: &world.RunDeactivated{}})
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("runs watch: exit %d, stderr %q", code, errb.String())
		}
	case <-ctx.Done():
		t.Fatalf("runs watch did not end with the compensation:\n%s", out.String())
	}
	if o := out.String(); !strings.Contains(o, "undid charge") || strings.Count(o, "run_cancelled") != 1 {
		t.Errorf("runs watch:\n%s", o)
	}
}

// TestCompDetail: how a runs watch line tells each comp_* event.
func TestCompDetail(t *testing.T) {
	t.Parallel()
	retry := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	bad := &world.ErrorData{Message: "bank\x1b[31m down"}
	for _, tc := range []struct {
		data world.EventData
		want string
	}{
		{&world.CompStarted{StepName: "charge", Compensation: "refund", Attempt: 3, Interrupted: 1}, "undo charge with refund attempt 2 (+1 lost)"},
		{&world.CompStarted{}, ""},
		{&world.CompRetryScheduled{Error: bad, RetryAfter: retry}, `bank\x1b[31m down; retry at 03:04:05.000`},
		{&world.CompRetryScheduled{Error: bad}, `bank\x1b[31m down`},
		{&world.CompSucceeded{StepName: "charge"}, "undid charge"},
		{&world.CompFailed{StepName: "charge", Error: bad}, `could not undo charge: bank\x1b[31m down`},
		{&world.CompFailed{Error: bad}, `bank\x1b[31m down`},
		{&world.StepCreated{StepName: "charge", Compensation: "refund"}, "charge (undo: refund)"},
	} {
		t.Run(string(typeOf(tc.data)), func(t *testing.T) {
			t.Parallel()
			if got := eventDetail(&world.Event{CreatedAt: retry.Add(-time.Second), Data: tc.data}, false); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCompStatusColor: a timeline row's compensation status is coloured
// as its outcome: green once undone, red when the undo failed for good.
func TestCompStatusColor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ status, color string }{
		{"compensated", green}, {"compensation_failed", red}, {"compensating", yellow}, {"completed", green},
	} {
		if got := statusColor(tc.status); got != tc.color {
			t.Errorf("statusColor(%q) = %q, want %q", tc.status, got, tc.color)
		}
	}
}

// TestCompAttemptsMatchTimeline: the Compensations list counts attempts as
// the timeline's TRY column does (lost ones apart, "+n lost").
func TestCompAttemptsMatchTimeline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		attempt, lost int
		list, try     string
	}{
		{1, 0, "1 attempt", "1"},
		{3, 0, "3 attempts", "3"},
		{2, 1, "1 attempt (+1 lost)", "1 (+1 lost)"},
		{4, 2, "2 attempts (+2 lost)", "2 (+2 lost)"},
	} {
		got := compAttempts(&world.StepCompensation{Attempt: tc.attempt, Interrupted: tc.lost})
		row := timeline.Row{Attempt: tc.attempt - tc.lost, Lost: tc.lost}
		if got != tc.list || row.Try() != tc.try {
			t.Errorf("%d attempts, %d lost: list %q, TRY %q; want %q and %q", tc.attempt, tc.lost, got, row.Try(), tc.list, tc.try)
		}
	}
}
