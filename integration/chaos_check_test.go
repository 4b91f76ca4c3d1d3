//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/world"
)

// The chaos suite's size and length. CI runs the defaults; `make chaos`
// sets them high.
const (
	chaosRunsEnv     = "SKEIN_CHAOS_RUNS"     // emulator runs, and local runs started per restart x 10
	chaosDurationEnv = "SKEIN_CHAOS_DURATION" // how long each part keeps starting runs and killing
	chaosKillsEnv    = "SKEIN_CHAOS_KILLS"    // the local part's least number of SIGKILLs
	chaosSeedEnv     = "SKEIN_CHAOS_SEED"     // the random seed (default: the time)
)

// envInt reads a positive integer variable, or def.
func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// envDuration reads a duration variable, or def.
func envDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		tb.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}

// chaosSeed is SKEIN_CHAOS_SEED, or the time; the test logs it so that a
// failure's choices can be drawn again.
func chaosSeed(tb testing.TB) uint64 {
	tb.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(chaosSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			tb.Fatalf("%s=%q: %v", chaosSeedEnv, v, err)
		}
		seed = n
	}
	tb.Logf("chaos seed %d (%s=%d draws the same choices)", seed, chaosSeedEnv, seed)
	return seed
}

// chaosSink is an HTTP endpoint to which ChaosStep bodies report their
// start and end (demo.ChaosRecord), and a watch over the processes they ran
// in: a body without an end ended when its process died.
type chaosSink struct {
	srv *httptest.Server

	mu     sync.Mutex
	recs   []demo.ChaosRecord
	deaths map[int]time.Time // pid -> when it was seen dead (zero: alive)
	done   chan struct{}
	wg     sync.WaitGroup
}

func newChaosSink(tb testing.TB) *chaosSink {
	s := &chaosSink{deaths: map[int]time.Time{}, done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rec demo.ChaosRecord
		if err := json.NewDecoder(r.Body).Decode(&rec); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.recs = append(s.recs, rec)
		if _, ok := s.deaths[rec.PID]; !ok {
			s.deaths[rec.PID] = time.Time{}
		}
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	s.wg.Go(s.watch)
	tb.Cleanup(func() {
		close(s.done)
		s.wg.Wait()
		s.srv.Close()
	})
	return s
}

// URL is where the step bodies report.
func (s *chaosSink) URL() string { return s.srv.URL }

// died records that pid was killed at, or before, at.
func (s *chaosSink) died(pid int, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.deaths[pid]; !ok || d.IsZero() || at.Before(d) {
		s.deaths[pid] = at
	}
}

// watch notes every 20 ms which reporting processes have died.
func (s *chaosSink) watch() {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		now := time.Now()
		s.mu.Lock()
		for pid, d := range s.deaths {
			if d.IsZero() && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
				s.deaths[pid] = now
			}
		}
		s.mu.Unlock()
	}
}

// bodyRun is one execution of a step body: from its start record to its end
// record, or to its process's death.
type bodyRun struct {
	attempt, pid int
	start, end   time.Time
	ended        bool // an end record, rather than a death or "still running"
}

// bodies groups the records by run and step into executions.
func (s *chaosSink) bodies() map[[2]string][]bodyRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	type key struct {
		run, step    string
		attempt, pid int
	}
	open := map[key][]int{} // indexes of executions not yet ended
	out := map[[2]string][]bodyRun{}
	recs := append([]demo.ChaosRecord(nil), s.recs...)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].At < recs[j].At })
	for _, r := range recs {
		k, rs := key{r.RunID, r.StepID, r.Attempt, r.PID}, [2]string{r.RunID, r.StepID}
		switch r.Phase {
		case "start":
			out[rs] = append(out[rs], bodyRun{attempt: r.Attempt, pid: r.PID, start: time.Unix(0, r.At)})
			open[k] = append(open[k], len(out[rs])-1)
		case "end":
			if len(open[k]) == 0 {
				continue
			}
			i := open[k][0]
			open[k] = open[k][1:]
			out[rs][i].end, out[rs][i].ended = time.Unix(0, r.At), true
		}
	}
	now := time.Now()
	for rs, runs := range out {
		for i := range runs {
			if !runs[i].ended {
				runs[i].end = now
				if d := s.deaths[runs[i].pid]; !d.IsZero() {
					runs[i].end = d
				}
			}
		}
		out[rs] = runs
	}
	return out
}

// overlaps reports the executions of one step whose bodies ran at the same
// time.
func overlaps(runs []bodyRun) []string {
	runs = append([]bodyRun(nil), runs...)
	sort.Slice(runs, func(i, j int) bool { return runs[i].start.Before(runs[j].start) })
	var out []string
	for i := 1; i < len(runs); i++ {
		for j := range i {
			if runs[i].start.Before(runs[j].end) {
				out = append(out, fmt.Sprintf("attempt %d (pid %d, from %s) started while attempt %d (pid %d, %s to %s, ended=%v) still ran",
					runs[i].attempt, runs[i].pid, runs[i].start.Format("15:04:05.000"), runs[j].attempt, runs[j].pid,
					runs[j].start.Format("15:04:05.000"), runs[j].end.Format("15:04:05.000"), runs[j].ended))
			}
		}
	}
	return out
}

// allRuns lists every run in w.
func allRuns(ctx context.Context, w world.World) ([]world.Run, error) {
	var out []world.Run
	cursor := ""
	for {
		p, err := w.ListRuns(ctx, &world.ListRunsParams{Pagination: world.Pagination{Cursor: cursor, Limit: 100}})
		if err != nil {
			return nil, err
		}
		out = append(out, p.Items...)
		if !p.HasMore || len(p.Items) == 0 {
			return out, nil
		}
		cursor = p.Cursor
	}
}

// runEvents lists a run's whole log.
func runEvents(ctx context.Context, w world.World, runID string) ([]world.Event, error) {
	var out []world.Event
	cursor := ""
	for {
		p, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Cursor: cursor, Limit: 100}})
		if err != nil {
			return nil, err
		}
		out = append(out, p.Items...)
		if !p.HasMore || len(p.Items) == 0 {
			return out, nil
		}
		cursor = p.Cursor
	}
}

// chaosTally counts what a chaos check saw.
type chaosTally struct {
	Parents, Children, Steps, Bodies, Retried, HookPayloads, Compensated int
}

// checkChaos checks every run of w against the invariants, given the plan
// each parent ran (by run ID), and returns the violations, each naming its
// run.
func checkChaos(ctx context.Context, w world.World, sink *chaosSink, plans map[string]demo.ChaosPlan) ([]string, chaosTally, error) {
	var tally chaosTally
	runs, err := allRuns(ctx, w)
	if err != nil {
		return nil, tally, err
	}
	bodies := sink.bodies()
	logged := map[[2]string]bool{}
	var out []string
	childSteps := -1 // every plan's children run as many steps
	for _, p := range plans {
		childSteps = p.ChildSteps
	}
	for _, r := range runs {
		evs, err := runEvents(ctx, w, r.RunID)
		if err != nil {
			return nil, tally, err
		}
		var want int
		var plan demo.ChaosPlan
		switch r.WorkflowName {
		case demo.Chaos.Name():
			p, ok := plans[r.RunID]
			if !ok {
				out = append(out, fmt.Sprintf("run %s: a chaos run the test did not start", r.RunID))
				continue
			}
			plan, want = p, p.Serial+p.Fan+1
			tally.Parents++
		case demo.ChaosChild.Name():
			want = childSteps
			tally.Children++
		default:
			out = append(out, fmt.Sprintf("run %s: unexpected workflow %q", r.RunID, r.WorkflowName))
			continue
		}
		v := checkRunLog(r, evs, want, bodies, logged, &tally)
		if plan.Compensate {
			v = append(v, checkCompensations(r, evs, bodies, logged, &tally)...)
		}
		if r.WorkflowName == demo.Chaos.Name() && r.Status == world.RunStatusCompleted {
			var got demo.ChaosResult
			full, err := w.GetRun(ctx, &world.GetRunParams{RunID: r.RunID})
			if err != nil {
				return nil, tally, err
			}
			if err := json.Unmarshal(full.Output, &got); err != nil {
				v = append(v, fmt.Sprintf("result %s: %v", full.Output, err))
			} else if got.Steps != want || got.Child != plan.ChildSteps || got.ApprovedBy == "" {
				v = append(v, fmt.Sprintf("result %+v, want %d steps, child %d and an approver", got, want, plan.ChildSteps))
			}
		}
		for _, s := range v {
			out = append(out, fmt.Sprintf("run %s (%s): %s", r.RunID, r.WorkflowName, s))
		}
	}
	for k := range bodies {
		if !logged[k] {
			out = append(out, fmt.Sprintf("run %s: a body ran for step %s, which no log records", k[0], k[1]))
		}
	}
	return out, tally, nil
}

// checkRunLog checks one run's log, and the bodies of its steps.
func checkRunLog(r world.Run, evs []world.Event, wantSteps int, bodies map[[2]string][]bodyRun, logged map[[2]string]bool, tally *chaosTally) []string {
	var out []string
	terminal, deactivated := 0, 0
	created, completed := map[string]string{}, map[string]int{}
	completedAt := map[string]time.Time{}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			out = append(out, fmt.Sprintf("event %d has seq %d", i+1, ev.Seq))
		}
		if ev.Type().Terminal() {
			terminal++
		}
		if ev.Type() == world.EventRunDeactivated {
			deactivated++
			if terminal == 0 {
				out = append(out, fmt.Sprintf("run_deactivated at event %d, before the run's end", ev.Seq))
			}
		}
		switch d := ev.Data.(type) {
		case *world.StepCreated:
			created[ev.CorrelationID] = d.StepName
		case *world.StepCompleted:
			completed[ev.CorrelationID]++
			completedAt[ev.CorrelationID] = ev.CreatedAt
		case *world.StepRetrying:
			tally.Retried++
		case *world.HookReceived:
			tally.HookPayloads++
		case *world.RunFailed:
			msg := ""
			if d.Error != nil {
				msg = d.Error.Message
			}
			out = append(out, fmt.Sprintf("failed %s: %s", d.ErrorCode, msg))
		case *world.RunCancelled:
			out = append(out, "cancelled: "+d.Reason)
		}
	}
	if terminal != 1 {
		out = append(out, fmt.Sprintf("%d terminal events, want 1", terminal))
	}
	// The chaos workflows await every step they start, so nothing runs
	// after their end: run_deactivated commits with it, once.
	if deactivated > 1 || (terminal == 1 && deactivated != 1) {
		out = append(out, fmt.Sprintf("%d run_deactivated, want 1", deactivated))
	}
	if r.Status != world.RunStatusCompleted {
		out = append(out, fmt.Sprintf("status %s, want completed", r.Status))
	}
	chaos := 0
	for id, name := range created {
		logged[[2]string{r.RunID, id}] = true
		if n := completed[id]; n != 1 {
			out = append(out, fmt.Sprintf("step %s (%s) completed %d times in the log, want once", id, name, n))
		}
		if name != demo.ChaosStep.Name() {
			continue
		}
		chaos++
		tally.Steps++
		runs := bodies[[2]string{r.RunID, id}]
		tally.Bodies += len(runs)
		ended := false
		for _, b := range runs {
			ended = ended || b.ended
			if at, ok := completedAt[id]; ok && b.start.After(at) {
				out = append(out, fmt.Sprintf("step %s: attempt %d's body (pid %d) started at %s, after the step completed at %s",
					id, b.attempt, b.pid, b.start.Format("15:04:05.000"), at.Format("15:04:05.000")))
			}
		}
		if completed[id] > 0 && !ended {
			out = append(out, fmt.Sprintf("step %s completed, but no body of it ran to its end", id))
		}
		for _, o := range overlaps(runs) {
			out = append(out, fmt.Sprintf("step %s: %s", id, o))
		}
	}
	for id := range completed {
		if _, ok := created[id]; !ok {
			out = append(out, fmt.Sprintf("step %s completed but was never created", id))
		}
	}
	if chaos != wantSteps {
		out = append(out, fmt.Sprintf("%d chaos steps, want %d", chaos, wantSteps))
	}
	return out
}

// checkCompensations checks the compensations of a run that compensated
// its steps (ChaosPlan.Compensate): every chaos step of the run is
// compensated exactly once (one comp_succeeded, no comp_failed), most
// recently completed first, and some body of its compensation ran to its
// end, none after its comp_succeeded.
func checkCompensations(r world.Run, evs []world.Event, bodies map[[2]string][]bodyRun, logged map[[2]string]bool, tally *chaosTally) []string {
	var out []string
	chaos := map[string]bool{}
	completedSeq := map[string]int64{}
	succeeded := map[string]int{}
	succeededAt := map[string]time.Time{}
	var order []string
	for _, ev := range evs {
		id := ev.CorrelationID
		switch d := ev.Data.(type) {
		case *world.StepCreated:
			chaos[id] = d.StepName == demo.ChaosStep.Name()
		case *world.StepCompleted:
			completedSeq[id] = ev.Seq
		case *world.CompSucceeded:
			succeeded[id]++
			succeededAt[id] = ev.CreatedAt
			order = append(order, id)
		case *world.CompFailed:
			msg := ""
			if d.Error != nil {
				msg = d.Error.Message
			}
			out = append(out, fmt.Sprintf("step %s: compensation failed: %s", id, msg))
		}
	}
	for id, isChaos := range chaos {
		if !isChaos {
			continue
		}
		key := [2]string{r.RunID, demo.ChaosUndoPrefix + id}
		logged[key] = true
		if n := succeeded[id]; n != 1 {
			out = append(out, fmt.Sprintf("step %s compensated %d times in the log, want once", id, n))
			continue
		}
		tally.Compensated++
		ended := false
		for _, b := range bodies[key] {
			ended = ended || b.ended
			if b.start.After(succeededAt[id]) {
				out = append(out, fmt.Sprintf("step %s: a body of its compensation (pid %d) started after comp_succeeded", id, b.pid))
			}
		}
		if !ended {
			out = append(out, fmt.Sprintf("step %s compensated, but no body of its compensation ran to its end", id))
		}
	}
	for i := 1; i < len(order); i++ {
		if completedSeq[order[i]] > completedSeq[order[i-1]] {
			out = append(out, fmt.Sprintf("step %s compensated after step %s, which completed before it", order[i], order[i-1]))
		}
	}
	return out
}

// runIDsIn returns the run IDs the violations name, in order, once each.
func runIDsIn(violations []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range violations {
		for _, f := range strings.FieldsFunc(v, func(r rune) bool { return !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) }) {
			if strings.HasPrefix(f, world.PrefixRun) && !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out
}

// logRunEvidence logs the log of each run a violation names, and of the
// runs those logs name (a parent's child, a child's parent), so that a
// failure can be read without the store (which the test deletes). It
// returns the IDs of the runs it logged.
func logRunEvidence(ctx context.Context, tb testing.TB, w world.World, violations []string) []string {
	ids := runIDsIn(violations)
	direct := len(ids)
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	for i := 0; i < len(ids); i++ {
		id := ids[i]
		evs, err := runEvents(ctx, w, id)
		if err != nil {
			tb.Logf("run %s: events: %v", id, err)
			continue
		}
		var b strings.Builder
		for _, ev := range evs {
			data, _ := json.Marshal(ev.Data)
			if i < direct { // a run the violations name: its relatives too
				for _, rel := range runIDsIn([]string{string(data)}) {
					if !seen[rel] {
						seen[rel] = true
						ids = append(ids, rel)
					}
				}
			}
			if len(data) > 240 {
				data = append(data[:240], "..."...)
			}
			fmt.Fprintf(&b, "  %3d %s %-15s %-32s %s\n", ev.Seq, ev.CreatedAt.Format("15:04:05.000"), ev.Type(), ev.CorrelationID, data)
		}
		tb.Logf("run %s: %d events\n%s", id, len(evs), b.String())
	}
	return ids
}
