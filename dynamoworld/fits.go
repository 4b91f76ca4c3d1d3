package dynamoworld

import "github.com/skeinflow/skein/world"

// AppendFits implements world.AppendLimiter: it returns how many of events,
// from the first, one Append writes in one TransactWriteItems, so that a
// writer with more (a workflow fanning out hundreds of steps) commits them
// in several fenced Appends instead of being refused. It reads nothing: the
// count is an upper bound, from the events alone, of the items the
// planner puts in the transaction's core (plan_chunk.go), which must not
// exceed maxTransactionItems:
//
//   - the commit item, always;
//   - the run head when an event is a run event (only run events change
//     it; otherwise its update is empty and not sent); the run body for
//     run_created and a run's end; the idempotency item for run_created
//     with a key;
//   - one item per distinct step an event names: a put, an update or none
//     at all (a lazy step, or a lazy step the commit ends, then bare: it
//     depends on the cache, so it is counted);
//   - one per distinct wait: a put, an update, a delete, or a check when
//     the commit creates it and the run's end removes it;
//   - three per distinct hook a hook_created, hook_disposed or
//     hook_conflict names: its global item, its run link and its token
//     item (a hook_conflict writes two checks at most); hook_received
//     writes none.
//
// The deletions of a run's end beyond these (the hooks and waits of
// earlier commits) are not counted: what does not fit follows the
// transaction (the plan's overflow).
//
// Payloads (inputs, outputs, metadata, the commit's events) are moved to
// S3 whenever the transaction would exceed maxTransactionBytes, so a
// commit's size is bounded by what cannot move: keys, times, names. Each
// counted item is charged itemAllowance for keys, fixed attributes and
// the references of moved payloads, plus the names and tokens the events
// carry (step names, tokens, workflow names, idempotency keys, error codes,
// cancel reasons). Names the events do not carry (a step created by an
// earlier commit, named by a step_completed without StepName) are assumed
// to fit the budget's slack: 100 items use about 100 KiB of the 3.5 MB.
func (w *store) AppendFits(events []world.EventInput) int {
	n, _, _ := appendFits(events)
	return n
}

// itemAllowance is what AppendFits charges an item besides the strings it
// counts: keys (under 200 bytes), a dozen short attributes, up to seven
// payload references (80 bytes each in offloadPlan's reckoning) and a
// commit's list of lazy steps.
const itemAllowance = 1 << 10

// appendFits returns how many of events fit one transaction (at least one
// when events is not empty), with the items and bytes it counted for them.
func appendFits(events []world.EventInput) (n, items, bytes int) {
	c := commitCost{items: 1, bytes: itemAllowance, named: map[string]int{}}
	for i, in := range events {
		next, ok := c.with(in)
		if !ok {
			if i == 0 {
				// Too big alone: one event, for Append to judge.
				return 1, next.items, next.bytes
			}
			return i, c.items, c.bytes
		}
		c = next
	}
	return len(events), c.items, c.bytes
}

// commitCost is what a commit writes at most, as AppendFits counts it.
type commitCost struct {
	items, bytes     int
	head, body, idem bool
	// named: the entities counted ("s"/"w"/"h" + ID) -> the bytes of the
	// name or token charged for them.
	named map[string]int
}

// with returns c with in added, and whether that still fits. c.named is
// updated only when it does.
func (c commitCost) with(in world.EventInput) (commitCost, bool) {
	out := c // shares c.named
	var (
		key    string // the entity the event names, "" for a run event
		items  int    // the entity's items
		name   int    // the bytes of its name or token
		head   bool
		body   bool
		idem   bool
		strlen int // other strings: run attributes
	)
	switch d := in.Data.(type) {
	case *world.RunCreated:
		head, body, idem = true, true, d.IdempotencyKey != ""
		strlen = 2*len(d.WorkflowName) + len(d.DeploymentID) + 2*len(d.IdempotencyKey) + len(d.Version)
		n, b := attributeCost(d.Attributes)
		out.items, out.bytes, strlen = out.items+n, out.bytes+n*itemAllowance, strlen+b
	case *world.AttributeSet:
		head, body = true, true
		n, b := attributeCost(d.Attributes)
		out.items, out.bytes, strlen = out.items+n, out.bytes+n*itemAllowance, b
	case *world.RunStarted:
		head = true
	case *world.RunCompleted:
		head, body = true, true
	case *world.RunFailed:
		head, body, strlen = true, true, len(d.ErrorCode)
	case *world.RunCancelled:
		head, body, strlen = true, true, len(d.Reason)
	case *world.RunHeld:
		head, strlen = true, len(d.ErrorCode)
		if d.Error != nil {
			strlen += len(d.Error.Type) + len(d.Error.Message) + len(d.Error.Stack)
		}
	case *world.StepCreated:
		key, items, name = "s", 1, len(d.StepName)+len(d.Compensation)
	case *world.StepStarted:
		key, items, name = "s", 1, len(d.StepName)
	case *world.StepCompleted:
		key, items, name = "s", 1, len(d.StepName)
	case *world.StepFailed:
		key, items, name = "s", 1, len(d.StepName)
	case *world.StepRetrying:
		key, items, name = "s", 1, len(d.StepName)
	case *world.CompStarted:
		key, items, name = "s", 1, len(d.StepName)+len(d.Compensation)
	case *world.CompRetryScheduled:
		key, items, name = "s", 1, len(d.StepName)
	case *world.CompSucceeded:
		key, items, name = "s", 1, len(d.StepName)
	case *world.CompFailed:
		key, items, name = "s", 1, len(d.StepName)
	case *world.WaitCreated, *world.WaitCompleted:
		key, items = "w", 1
	case *world.HookCreated:
		key, items, name = "h", 3, 3*len(d.Token)
	case *world.HookConflict:
		key, items, name = "h", 3, 3*len(d.Token)
	case *world.HookDisposed:
		key, items, name = "h", 3, 3*len(d.Token)
	}
	once := func(counted *bool, writes bool) {
		if writes && !*counted {
			*counted = true
			out.items++
			out.bytes += itemAllowance
		}
	}
	once(&out.head, head)
	once(&out.body, body)
	once(&out.idem, idem)
	out.bytes += strlen
	var grown string
	if key != "" {
		key += in.CorrelationID
		charged, seen := c.named[key]
		if !seen {
			out.items += items
			out.bytes += items * itemAllowance
		}
		if !seen || name > charged {
			out.bytes += name - charged
			grown = key
		}
	}
	if out.items > maxTransactionItems || out.bytes > maxTransactionBytes {
		return out, false
	}
	if grown != "" {
		// The map is shared with c: write to it only once the event is in.
		out.named[grown] = name
	}
	return out, true
}
