package worldtest_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/skeinflow/skein/world"
)

// limitedMemWorld is memWorld with a bounded commit, as a World on a store
// whose transactions take a limited number of items (dynamoworld's take
// 100): an Append whose events would write more than memCommitLimit items
// is refused, and AppendFits says how many fit. Its mutants ("limited-"
// bugs) get AppendFits wrong.
type limitedMemWorld struct {
	*memWorld
	calls atomic.Int64 // AppendFits calls (the impure mutant's state)
}

// memCommitLimit is limitedMemWorld's item limit: small, so that the
// suite's wide commits take several chunks.
const memCommitLimit = 30

var _ world.AppendLimiter = (*limitedMemWorld)(nil)

// isLimited reports whether bug names limitedMemWorld or one of its
// mutants.
func isLimited(bug string) bool { return strings.HasPrefix(bug, "limited") }

// memItems counts the items events write, as a transactional store would:
// one for the commit, one for the run when a run event changes it, one per
// step and wait, hookItems per hook (created, disposed); hook_received
// writes nothing. It returns how many events, from the first, stay within
// limit (at least one), and the items of all of them.
func memItems(events []world.EventInput, hookItems, limit int) (fit, items int) {
	items, fit = 1, len(events)
	run := false
	seen := map[string]bool{}
	for i, in := range events {
		add := 0
		switch in.Data.(type) {
		case *world.RunCreated, *world.RunStarted, *world.RunCompleted, *world.RunFailed, *world.RunCancelled:
			if !run {
				run, add = true, 1
			}
		case *world.HookReceived:
		case *world.HookCreated, *world.HookDisposed, *world.HookConflict:
			if !seen[in.CorrelationID] {
				seen[in.CorrelationID], add = true, hookItems
			}
		default:
			if !seen[in.CorrelationID] {
				seen[in.CorrelationID], add = true, 1
			}
		}
		items += add
		if items > limit && fit == len(events) {
			fit = max(i, 1)
		}
	}
	return fit, items
}

func (w *limitedMemWorld) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	if p != nil {
		if _, items := memItems(p.Events, 3, memCommitLimit); items > memCommitLimit && len(p.Events) > 1 {
			return nil, fmt.Errorf("%w: a commit of %d events writes %d items; the limit is %d", world.ErrInvalid, len(p.Events), items, memCommitLimit)
		}
	}
	return w.memWorld.Append(ctx, p)
}

func (w *limitedMemWorld) AppendFits(events []world.EventInput) int {
	switch w.bug {
	case "limited-fits-all":
		return len(events)
	case "limited-fits-none":
		return 0
	case "limited-hooks-as-one":
		fit, _ := memItems(events, 1, memCommitLimit)
		return fit
	case "limited-impure":
		fit, _ := memItems(events, 3, memCommitLimit)
		return max(1, fit-int(w.calls.Add(1)%2))
	}
	fit, _ := memItems(events, 3, memCommitLimit)
	return fit
}
