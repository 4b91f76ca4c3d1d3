package worldtest_test

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/skeinflow/skein/world/worldtest"
)

func memSubject(bug string) func(t *testing.T) worldtest.Subject {
	return func(t *testing.T) worldtest.Subject {
		w := newMemWorld(bug)
		clock := new(worldtest.Clock)
		w.now = clock.Now
		if isWatchBug(bug) {
			bw := brokenWatcher{memWorld: w, bug: bug}
			return worldtest.Subject{World: bw, Consumer: bw, Clock: clock}
		}
		if isLimited(bug) {
			lw := &limitedMemWorld{memWorld: w}
			return worldtest.Subject{World: lw, Consumer: lw, Clock: clock}
		}
		return worldtest.Subject{World: w, Consumer: w, Clock: clock, AbandonClaim: w.abandonClaim}
	}
}

// TestMemWorld checks that the suite passes against a correct World.
func TestMemWorld(t *testing.T) {
	worldtest.Run(t, worldtest.Options{New: memSubject("")})
}

// TestMemWorldWithoutConsumer checks that the queue cases needing a Consumer
// skip rather than fail when there is none.
func TestMemWorldWithoutConsumer(t *testing.T) {
	worldtest.Run(t, worldtest.Options{
		New: func(t *testing.T) worldtest.Subject {
			w, clock := newMemWorld(""), new(worldtest.Clock)
			w.now = clock.Now
			return worldtest.Subject{World: w, Clock: clock}
		},
	})
}

// TestLimitedMemWorld checks that the suite passes against a correct World
// whose commits are bounded (a world.AppendLimiter), the wide-commit cases
// included.
func TestLimitedMemWorld(t *testing.T) {
	worldtest.Run(t, worldtest.Options{New: memSubject("limited")})
}

const mutantEnv = "WORLDTEST_SELFTEST_MUTANT"

// TestMutant runs the suite against a broken memWorld. It runs only as a
// subprocess of TestSuiteCatchesMutants, which expects it to fail.
func TestMutant(t *testing.T) {
	bug := os.Getenv(mutantEnv)
	if bug == "" {
		t.Skip("runs only as a subprocess of TestSuiteCatchesMutants")
	}
	worldtest.Run(t, worldtest.Options{New: memSubject(bug)})
}

// fitsCases are the suite's wide-commit cases (a World that is a
// world.AppendLimiter).
var fitsCases = []string{
	"append_fits_steps_created", "append_fits_steps_created_and_started", "append_fits_hooks",
	"append_fits_waits", "append_fits_mixed_from_run_created", "append_fits_mixed_ending_the_run",
}

// mutants are the broken variants of memWorld: each must make the named
// cases of its group fail.
var mutants = []struct {
	bug, group string
	mustFail   []string
}{
	{"ignore-step-lease", "steps", []string{"start_while_leased"}},
	{"ignore-step-lease", "races", []string{"start_same_step"}},
	{"no-token-check", "hooks", []string{"token_held_by_other_run_conflict_event", "token_held_by_same_run_conflict_event"}},
	{"no-token-check", "races", []string{"claim_same_token"}},
	{"empty-last-cursor", "pagination", []string{"events_cursor_on_every_page", "runs_newest_first_filtered", "steps_in_creation_order", "hooks_all_and_by_run", "events_by_correlation", "events_resume_after_append"}},
	{"partial-commit", "commit", []string{"refused_second_event_appends_nothing", "refused_commit_does_not_end_run"}},
	{"no-auto-dispose", "hooks", []string{"run_end_disposes_hooks"}},
	{"no-auto-dispose", "waits", []string{"run_end_removes_waits"}},
	{"wait-resume-dropped", "waits", []string{"create", "create_duplicate_conflict", "complete"}},
	{"hold-dropped", "holds", []string{"hold_stored_and_released", "held_run_accepts_work"}},
	{"version-dropped", "runs", []string{"version_kept"}},
	{"append-skipped", "runs", []string{"start_running_is_noop", "cancel_repeated_appends_nothing"}},
	{"racy-append", "races", []string{"dense_seq_under_concurrent_appends", "create_same_step", "complete_same_step"}},
	{"runs-oldest-first", "pagination", []string{"runs_newest_first_filtered"}},
	{"cursor-any-run", "pagination", []string{"invalid_cursor"}},
	{"lease-steal", "leases", []string{"acquire_fails_fast", "reacquire_extends", "release_tolerant"}},
	{"lease-steal", "races", []string{"take_same_run_lease"}},
	{"lease-release-any", "leases", []string{"release_tolerant"}},
	{"no-fence", "commit", []string{"if_last_seq_fence"}},
	{"no-fence", "leases", []string{"lapsed_holder_commit_fenced"}},
	{"step-renew-noop", "leases", []string{"step_lease_renew"}},
	{"comp-renew-noop", "compensation", []string{"comp_lease_renew"}},
	{"queue-no-delay", "queue", []string{"delay_honoured"}},
	{"queue-no-dedupe", "queue", []string{"idempotency_key_dedupes", "idempotency_key_single_delivery"}},
	{"queue-pending-duplicate", "queue", []string{"idempotency_key_stranded_claim"}},
	{"queue-ack-noop", "queue", []string{"ack_removes"}},
	{"queue-extend-noop", "queue", []string{"extend_keeps_delivery"}},
	{"queue-no-visibility", "queue", []string{"visibility_lapse_redelivers", "concurrent_receivers_exclusive"}},
	{"stream-write-after-close", "streams", []string{"close"}},
	{"stream-interleave", "streams", []string{"concurrent_writers"}},
	{"limited-fits-all", "commit", fitsCases},
	{"limited-fits-none", "commit", fitsCases},
	{"limited-hooks-as-one", "commit", []string{"append_fits_hooks", "append_fits_mixed_from_run_created", "append_fits_mixed_ending_the_run"}},
	{"limited-impure", "commit", fitsCases},
	{"attr-filter-ignored", "attributes", []string{"list_by_attribute"}},
	{"empty-last-cursor", "attributes", []string{"list_by_attribute"}},
	{"partial-commit", "attributes", []string{"invalid_refused_run_unchanged"}},
	{"stream-done-early", "streams", []string{"write_read_in_order", "limit_and_next", "close", "tail_live"}},
	{"watch-resume-from-start", "watch", []string{"run_resume", "all_runs_resume"}},
	{"watch-no-types", "watch", []string{"run_types", "all_runs_types"}},
	{"watch-no-end", "watch", []string{"run_types", "run_ends_after_terminal"}},
	{"no-limits", "limits", []string{"payload_refused_run_unchanged", "events_refused_end_accepted"}},
	{"late-bytes-exempt", "limits", []string{"run_bytes_late_outcome"}},
	{"no-stream-limit", "limits", []string{"stream_bytes_refused", "stream_bytes_concurrent_writers"}},
	{"no-stream-count", "limits", []string{"streams_refused", "streams_concurrent_writers"}},
	{"comp-dropped", "compensation", []string{"declared_round_trip", "compensate_while_active", "after_failure_then_deactivate", "created_and_started_in_one_append"}},
	{"comp-counts-dropped", "compensation", []string{"compensate_while_active", "after_failure_then_deactivate", "cancel_with_compensation", "running_refuses_deactivation", "several_in_one_append"}},
}

// TestSuiteCatchesMutants proves the suite has teeth: against each broken
// memWorld it must fail, in the cases written to catch that bug.
func TestSuiteCatchesMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in subprocesses")
	}
	if os.Getenv(mutantEnv) != "" {
		t.Skip("inside a mutant subprocess")
	}
	for _, m := range mutants {
		t.Run(m.bug+"/"+m.group, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMutant$/^"+m.group+"$", "-test.count=1", "-test.timeout=5m")
			cmd.Env = append(os.Environ(), mutantEnv+"="+m.bug)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite's %s group passed against the %s mutant; want failures in %v\n%s", m.group, m.bug, m.mustFail, out)
			}
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatalf("running the mutant: %v", err)
			}
			for _, c := range m.mustFail {
				if !bytes.Contains(out, []byte("--- FAIL: TestMutant/"+m.group+"/"+c+" (")) {
					t.Errorf("the %s mutant did not fail case %s/%s", m.bug, m.group, c)
				}
			}
			if t.Failed() {
				t.Logf("mutant output:\n%s", out)
			}
		})
	}
}
