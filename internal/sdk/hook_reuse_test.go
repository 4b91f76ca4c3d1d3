package sdk_test

import (
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// reuseIn drives hookReuse: Rounds hooks on one Token, one after the
// other; with Early, each round first creates and disposes of a hook that
// never waits (its creation and disposal fall into the same commit as the
// next hook's creation).
type reuseIn struct {
	Token  string
	Rounds int
	Early  bool
}

// hookReuse creates a hook, receives one payload, disposes of it and
// creates the next on the same token.
var hookReuse = sdk.New("hookReuse", func(ctx sdk.Context, in reuseIn) ([]string, error) {
	var got []string
	for range in.Rounds {
		if in.Early {
			sdk.NewHook[string](ctx, sdk.HookOptions{Token: in.Token}).Dispose(ctx)
		}
		h := sdk.NewHook[string](ctx, sdk.HookOptions{Token: in.Token})
		p, err := h.Receive(ctx)
		if err != nil {
			return got, err
		}
		got = append(got, p)
		h.Dispose(ctx)
	}
	return got, nil
})

// TestHookDisposeThenCreateSameToken: a hook disposed and created again on
// the same token in one run is a new hook of that run, never a conflict
// with the run itself; each disposal is logged before the next creation.
func TestHookDisposeThenCreateSameToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, hookReuse)
	for _, tc := range []struct {
		name  string
		early bool
	}{{"receive_dispose_create", false}, {"create_dispose_create_in_one_commit", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := e.ctx()
			token := "reuse/" + tc.name
			const rounds = 3
			run, err := hookReuse.Start(ctx, e.client, reuseIn{Token: token, Rounds: rounds, Early: tc.early})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for i := range rounds {
				var hookID string
				waitFor(t, "a new hook on the token", func() bool {
					h, err := e.client.GetHookByToken(ctx, token)
					if err != nil || seen[h.ID] {
						if st, _ := statusOf(ctx, run); st == world.RunStatusFailed {
							_, err := run.Result(ctx)
							t.Fatalf("round %d: the run failed: %v", i, err)
						}
						return false
					}
					hookID = h.ID
					return h.RunID == run.ID()
				})
				seen[hookID] = true
				if _, err := e.client.ResumeHook(ctx, token, string(rune('a'+i))); err != nil {
					t.Fatalf("round %d: %v", i, err)
				}
			}
			got, err := run.Result(ctx)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if len(got) != rounds || got[0] != "a" || got[2] != "c" {
				t.Fatalf("payloads %v, want [a b c]", got)
			}
			evs := e.events(run.ID())
			if n := countEvents(evs, world.EventHookConflict); n != 0 {
				t.Fatalf("the log has %d hook_conflict events, want none", n)
			}
			disposed := map[string]bool{}
			for _, ev := range evs {
				switch ev.Type() {
				case world.EventHookDisposed:
					disposed[ev.CorrelationID] = true
				case world.EventHookCreated:
					if len(disposed) != countBefore(evs, ev.Seq, world.EventHookCreated) {
						t.Fatalf("hook_created at %d before the previous hook's hook_disposed", ev.Seq)
					}
				}
			}
		})
	}
}

// countBefore counts the events of type t before seq.
func countBefore(evs []world.Event, seq int64, t world.EventType) int {
	n := 0
	for _, ev := range evs {
		if ev.Seq < seq && ev.Type() == t {
			n++
		}
	}
	return n
}
