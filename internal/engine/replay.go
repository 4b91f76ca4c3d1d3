package engine

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
)

type opKind uint8

const (
	opStep opKind = iota + 1
	opHook
	opWait
	opAttr // attributes set by the code (attributes.go)
)

func (k opKind) String() string {
	switch k {
	case opStep:
		return "step"
	case opHook:
		return "hook"
	case opWait:
		return "wait"
	case opAttr:
		return "attributes"
	}
	return "operation"
}

// op is one operation the workflow asked for: a step, a hook, a wait or
// attributes.
type op struct {
	kind  opKind
	id    string
	index int
	name  string // step name or hook token; empty for a wait; sorted keys for attributes

	attrs map[string]string // attributes: what the code sets

	created bool // its creation event has been consumed
	ordered bool // in its replay's stepOrder
	timed   bool // in its replay's stepOrder.timed

	// Steps and waits settle once.
	settled bool
	order   int64 // settlement order
	result  json.RawMessage
	failure *world.ErrorData

	// Step state, as the log has it.
	input      json.RawMessage
	digest     string // runrules.DigestInput(input), computed once (inputDigest)
	status     world.StepStatus
	attempt    int
	lost       int // attempts interrupted by the loss of their executor
	retryAfter time.Time
	leaseUntil time.Time
	queued     bool // the last attempt was a queue message's (StepStarted.Queued); kept while it retries
	startedAt  time.Time

	// Wait: an absolute time, or a duration resolved when committed.
	resumeAt time.Time
	duration time.Duration

	// Hook.
	metadata      json.RawMessage
	isWebhook     bool
	registered    bool
	regOrder      int64
	conflictRunID string
	payloads      []payload
	disposeWanted bool
	disposeLogged bool
	disposeSent   bool
	oneShot       bool // disposed once it has a payload (DisposeOnReceipt)
	// patches are the patch markers its creation event records (see
	// patch.go).
	patches []string

	// disposeAt is how many operations the code had asked for when it
	// called Dispose: the disposal is committed before the creation of any
	// later one (a new hook on the same token must find it free).
	disposeAt int

	// Compensation of a step (compop.go): the one the code declares, the
	// one its step_created records, and its progress once the code asked
	// for it.
	compDeclared string
	compLogged   string
	comp         *compState
}

type payload struct {
	data  json.RawMessage
	order int64
}

// runMeta describes the run, from its run_created event.
type runMeta struct {
	runID        string
	workflowName string
	input        json.RawMessage
	execCtx      json.RawMessage
	createdAt    time.Time
}

// replayer applies a run's events, in log order, to the workflow coroutine's
// state: it matches creation events with the operations the code asks for,
// settles futures and wakes the coroutine when the condition it waits for
// holds. Events the engine has produced but not yet committed (inline step
// results, elapsed waits) are delivered through the same paths.
type replayer struct {
	meta   runMeta
	wf     *Workflow
	det    *detSource
	logger *slog.Logger
	now    time.Time

	ops     []*op
	byID    map[string]*op
	matched int
	settles int64
	// failures counts the settlements that may have failed a future: a
	// step's failure, a hook's conflict, a hook payload (a child run's
	// outcome arrives as one). Context.Progress reports both counts.
	failures int64

	openSteps map[string]*op // created, not settled
	stepOrder stepOrder      // openSteps in creation order (scheduler.go)
	openWaits map[string]*op // created, not settled
	openComps map[string]*op // steps whose compensation the code asked for, not ended
	disposals []*op
	// hooks and waits count the hooks and waits the code asked for,
	// recorded or not (checked against the run's limits, limits.go).
	hooks, waits int
	// childFlows maps the token of a child run's hook to the child's
	// workflow, as the log records it (childname.go).
	childFlows map[string]string

	co    *coroutine
	ctx   *Context
	guard apiGuard
	// slices counts the coroutine's slices (stuck.go): unchanged, the code
	// has not run meanwhile (absorb.go).
	slices int64
	// quiet holds the coroutine back while a session absorbs other
	// writers' events (absorb.go): consume settles, nothing wakes.
	quiet bool
	// watch is the session's (nil outside a session: see stuck.go), read
	// by the workflow's foreign goroutines; a kept workflow (sticky.go)
	// changes sessions.
	watch atomic.Pointer[sliceWatch]
	// tainted: the state holds what a session learned from the World, not
	// the log (a refused start, a step's current lease), so it is no
	// longer the replay of its log and is not kept (sticky.go).
	tainted bool

	// Outcome.
	finished bool // the coroutine returned or panicked
	output   json.RawMessage
	failure  *world.ErrorData
	failCode string
	terminal world.RunStatus // a terminal event was consumed
	lastSeq  int64
	// Log lines (see logline.go): the seq of the last event the code
	// caused, the lines the code has logged, and the digests of the lines
	// the session's coroutines passed, by position.
	authored   int64
	lines      int
	said       []uint64
	divergedAt int64
	divergence *Divergence // where, when the replay diverged

	// Patches (see patch.go): the creation events of the log and the patch
	// markers they carry, the decisions taken, and the markers waiting for
	// the next creation.
	creations      int
	marked         map[string]bool
	patched        map[string]bool
	patchSites     map[string]string
	pendingPatches []string

	// attrKeys are the run's attribute keys: every key the log sets
	// (noted before replay), and those the code asked for.
	attrKeys map[string]bool
}

func newReplayer(wf *Workflow, logger *slog.Logger) *replayer {
	return &replayer{
		wf:        wf,
		logger:    logger,
		byID:      make(map[string]*op),
		openSteps: make(map[string]*op),
		openWaits: make(map[string]*op),
		openComps: make(map[string]*op),
		guard:     newAPIGuard(),
	}
}

// over reports whether the replayer has nothing more to do: the workflow
// finished (or diverged) or the log ended the run.
func (r *replayer) over() bool { return r.finished || r.terminal != "" }

// stop discards the coroutine.
func (r *replayer) stop() {
	r.retire()
	if r.co != nil {
		r.co.stop()
		r.co = nil
	}
}

// consume applies one committed event.
func (r *replayer) consume(ev *world.Event) {
	r.lastSeq = ev.Seq
	if r.terminal != "" {
		return
	}
	if r.finished {
		// After the workflow returned, only a creation event contradicts it.
		switch d := ev.Data.(type) {
		case *world.StepCreated, *world.HookCreated, *world.HookConflict, *world.WaitCreated:
			if r.failCode != world.CodeReplayDivergence {
				r.diverge(ev, "the workflow has returned")
			}
		case *world.AttributeSet:
			// The code's last attributes precede the run's end.
			if ev.CorrelationID != "" && !r.matchFinal(ev, d) && r.failCode != world.CodeReplayDivergence {
				r.diverge(ev, "the workflow has returned")
			}
		case *world.RunCompleted:
			r.terminal = world.RunStatusCompleted
		case *world.RunFailed:
			r.terminal = world.RunStatusFailed
		case *world.RunCancelled:
			r.terminal = world.RunStatusCancelled
		}
		return
	}
	switch d := ev.Data.(type) {
	case *world.RunCreated:
		r.start(ev, d)
		return
	case *world.RunCompleted:
		r.end(world.RunStatusCompleted)
		return
	case *world.RunFailed:
		r.end(world.RunStatusFailed)
		return
	case *world.RunCancelled:
		r.end(world.RunStatusCancelled)
		return
	case *world.StepCreated:
		if o := r.matchStep(ev, d); o != nil {
			o.status = world.StepStatusPending
			o.compLogged = d.Compensation
			r.openSteps[o.id] = o
			r.stepOrder.add(o)
		}
	case *world.CompStarted, *world.CompRetryScheduled, *world.CompSucceeded, *world.CompFailed:
		r.consumeComp(ev)
	case *world.StepStarted:
		if o := r.step(ev); o != nil {
			o.status = world.StepStatusRunning
			o.attempt, o.lost = d.Attempt, d.Interrupted
			o.leaseUntil = d.LeaseExpiresAt
			o.queued = d.Queued
			o.retryAfter = time.Time{}
			r.stepOrder.timer(o)
			if o.startedAt.IsZero() {
				o.startedAt = ev.CreatedAt
			}
		}
	case *world.StepRetrying:
		if o := r.step(ev); o != nil {
			r.retrying(o, d.RetryAfter)
		}
	case *world.StepCompleted:
		if o := r.step(ev); o != nil {
			r.settleStep(o, d.Result, nil)
		}
	case *world.StepFailed:
		if o := r.step(ev); o != nil {
			r.settleStep(o, nil, d.Error)
		}
	case *world.HookCreated:
		if o := r.match(ev, opHook, d.Token); o != nil {
			r.settles++
			o.registered, o.regOrder = true, r.settles
		}
	case *world.HookConflict:
		if o := r.match(ev, opHook, d.Token); o != nil {
			r.settles++
			r.failures++
			o.registered, o.regOrder = true, r.settles
			o.conflictRunID = d.ConflictingRunID
			if o.conflictRunID == "" {
				o.conflictRunID = "unknown"
			}
		}
	case *world.HookReceived:
		if o := r.byID[ev.CorrelationID]; o != nil && o.kind == opHook {
			r.settles++
			r.failures++
			o.payloads = append(o.payloads, payload{data: d.Payload, order: r.settles})
			r.disposeReceived(o)
		}
	case *world.HookDisposed:
		if o := r.byID[ev.CorrelationID]; o != nil && o.kind == opHook {
			o.disposeLogged = true
		}
	case *world.WaitCreated:
		if o := r.match(ev, opWait, ""); o != nil {
			o.resumeAt = d.ResumeAt
			r.openWaits[o.id] = o
		}
	case *world.WaitCompleted:
		if o := r.byID[ev.CorrelationID]; o != nil && o.kind == opWait {
			r.settleWait(o)
		}
	case *world.AttributeSet:
		r.noteAttributes(ev)
		if ev.CorrelationID != "" {
			r.match(ev, opAttr, attrName(d.Attributes)) // a client's has none
		}
	}
	if r.finished {
		return
	}
	// Time advances with every consumed event, except those the engine may
	// deliver before they are committed (their CreatedAt is not known when
	// the coroutine runs ahead on them): step results advance nothing, an
	// elapsed wait advances to its resume time.
	switch ev.Data.(type) {
	case *world.StepCompleted, *world.StepFailed, *world.StepRetrying, *world.WaitCompleted,
		*world.CompRetryScheduled, *world.CompSucceeded, *world.CompFailed:
	default:
		if ev.CreatedAt.After(r.now) {
			r.now = ev.CreatedAt
		}
	}
	if r.midCommit(ev) {
		return
	}
	r.wake()
}

func (r *replayer) step(ev *world.Event) *op {
	o := r.byID[ev.CorrelationID]
	if o == nil || o.kind != opStep {
		r.logger.Warn("engine: event for an unknown step", "run", r.meta.runID, "seq", ev.Seq, "type", ev.Type(), "step", ev.CorrelationID)
		return nil
	}
	return o
}

func (r *replayer) start(ev *world.Event, d *world.RunCreated) {
	r.meta = runMeta{
		runID: ev.RunID, workflowName: d.WorkflowName, input: d.Input,
		execCtx: d.ExecutionContext, createdAt: ev.CreatedAt,
	}
	r.det = newDetSource(ev.RunID).withSecret(ev.RunID, d.Secret)
	r.now = ev.CreatedAt
	r.ctx = &Context{r: r}
	input := d.Input
	r.co = newCoroutine(func() (json.RawMessage, error) { return r.wf.Fn(r.ctx, input) })
	r.guard.home = r.co
	r.guard.live.Store(true)
	r.slice()
	r.afterSlice()
}

func (r *replayer) end(status world.RunStatus) {
	r.terminal = status
	r.stop()
}

// match pairs a creation event with the next operation the code asked for.
func (r *replayer) match(ev *world.Event, kind opKind, name string) *op {
	if r.matched >= len(r.ops) {
		r.diverge(ev, "the workflow asks for nothing more (it is waiting)")
		return nil
	}
	o := r.ops[r.matched]
	if o.kind != kind || o.name != name || o.id != ev.CorrelationID {
		r.diverge(ev, "the workflow asks for "+r.describeAsked(o))
		return nil
	}
	r.matched++
	o.created = true
	return o
}

// matchStep matches a step_created with the next operation, and then
// compares the inputs: a log that records the digest of the step's input
// (older logs do not) must name the input the code passes now, or the step's
// recorded result would be delivered to another call.
func (r *replayer) matchStep(ev *world.Event, d *world.StepCreated) *op {
	o := r.match(ev, opStep, d.StepName)
	if o == nil || d.InputDigest == "" {
		return o
	}
	if got := o.inputDigest(); got != d.InputDigest {
		r.diverge(ev, fmt.Sprintf("the workflow's operation %d is %s with input digest %s (called with other arguments: "+
			"recorded input %s, new input %s; usually an argument's JSON encoding changed, such as a field added to its "+
			"type, or the arguments come from ranging over a map)",
			o.index+1, describeOp(o), got, clipInput(d.Input), clipInput(o.input)))
		return nil
	}
	return o
}

// maxShownInput bounds how much of an input a divergence message shows.
const maxShownInput = 160

// clipInput shows an encoded input in a message: quoted (escaped), clipped
// to maxShownInput bytes.
func clipInput(in json.RawMessage) string {
	switch {
	case len(in) == 0:
		return "(none)"
	case len(in) > maxShownInput:
		return fmt.Sprintf("%q... (%d bytes)", in[:maxShownInput], len(in))
	}
	return fmt.Sprintf("%q", in)
}

// inputDigest returns the digest of the step's encoded input, as
// step_created records it.
func (o *op) inputDigest() string {
	if o.digest == "" {
		o.digest = runrules.DigestInput(o.input)
	}
	return o.digest
}

func describeOp(o *op) string {
	switch o.kind {
	case opStep:
		return fmt.Sprintf("step %q (%s)", o.name, o.id)
	case opHook:
		return fmt.Sprintf("hook with token %s (%s)", quotedToken(o.name, o.isWebhook), o.id)
	case opAttr:
		return fmt.Sprintf("attributes with keys %q (%s)", o.name, o.id)
	default:
		return fmt.Sprintf("wait (%s)", o.id)
	}
}

func describeEvent(ev *world.Event) string {
	switch d := ev.Data.(type) {
	case *world.StepCreated:
		if d.InputDigest != "" {
			return fmt.Sprintf("step_created for step %q (%s) with input digest %s", d.StepName, ev.CorrelationID, d.InputDigest)
		}
		return fmt.Sprintf("step_created for step %q (%s)", d.StepName, ev.CorrelationID)
	case *world.HookCreated:
		return fmt.Sprintf("hook_created for token %s (%s)", quotedToken(d.Token, d.IsWebhook), ev.CorrelationID)
	case *world.HookConflict:
		return fmt.Sprintf("hook_conflict for token %q (%s)", d.Token, ev.CorrelationID)
	case *world.WaitCreated:
		return fmt.Sprintf("wait_created (%s)", ev.CorrelationID)
	case *world.AttributeSet:
		return fmt.Sprintf("attribute_set for keys %q (%s)", attrName(d.Attributes), ev.CorrelationID)
	}
	return fmt.Sprintf("%s (%s)", ev.Type(), ev.CorrelationID)
}

// replay applies a whole committed log, which each walks in order, to a
// new replayer: it notes every event first (a patch decision looks ahead,
// and the log lines know where the recorded history ends), then consumes
// them. A session's rebuild and CheckLog both replay through it.
func (r *replayer) replay(each func(fn func(ev *world.Event))) {
	each(r.noteAuthored)
	each(r.consume)
}

// diverge fails the run: the log and the code disagree.
func (r *replayer) diverge(ev *world.Event, code string) {
	logged := r.describeLogged(ev)
	msg := fmt.Sprintf("replay divergence at event %d: the log has %s, but %s", ev.Seq, logged, code)
	r.divergence = &Divergence{Seq: ev.Seq, EventID: ev.EventID, EventType: string(ev.Type()),
		CorrelationID: ev.CorrelationID, Logged: logged, Asked: code, Code: world.CodeReplayDivergence, Message: msg}
	r.stop()
	r.finished = true
	r.output = nil
	r.failCode = world.CodeReplayDivergence
	r.failure = &world.ErrorData{Type: TypeReplayDivergence, Message: msg}
	r.divergedAt = ev.Seq
}

// wake runs the coroutine while the condition it waits for holds.
func (r *replayer) wake() {
	for r.co != nil && !r.finished && !r.quiet && r.co.ready() {
		r.slice()
		r.afterSlice()
	}
}

func (r *replayer) afterSlice() {
	co := r.co
	if r.failMisused() || co == nil || !co.done {
		return
	}
	r.finished = true
	switch {
	case co.panic != nil:
		r.failure, r.failCode = co.panic, world.CodeUserError
	case co.err != nil:
		r.failure = r.encodeWorkflowError(co.err)
		r.failCode = workflowFailCode(r.failure)
	default:
		r.output = co.output
		if len(r.output) == 0 {
			r.output = json.RawMessage("null")
		}
	}
	r.stop()
}

func (r *replayer) encodeWorkflowError(err error) *world.ErrorData {
	if f, ok := err.(*Failure); ok && f.Data != nil {
		return f.Data
	}
	return &world.ErrorData{Type: fmt.Sprintf("%T", err), Message: err.Error()}
}

func (r *replayer) settleStep(o *op, result json.RawMessage, failure *world.ErrorData) {
	if o.settled {
		return
	}
	r.settles++
	o.settled, o.order = true, r.settles
	o.result, o.failure = result, failure
	if failure != nil {
		r.failures++
		o.status = world.StepStatusFailed
	} else {
		o.status = world.StepStatusCompleted
	}
	delete(r.openSteps, o.id)
}

func (r *replayer) retrying(o *op, retryAfter time.Time) {
	o.status = world.StepStatusPending
	o.retryAfter = retryAfter
	o.leaseUntil = time.Time{}
	r.stepOrder.timer(o)
}

func (r *replayer) settleWait(o *op) {
	if o.settled {
		return
	}
	r.settles++
	o.settled, o.order = true, r.settles
	delete(r.openWaits, o.id)
	if o.resumeAt.After(r.now) {
		r.now = o.resumeAt
	}
}

// deliverStep applies an uncommitted step result.
func (r *replayer) deliverStep(o *op, result json.RawMessage, failure *world.ErrorData) {
	r.settleStep(o, result, failure)
	r.wake()
}

// deliverWait applies an uncommitted wait completion.
func (r *replayer) deliverWait(o *op) {
	r.settleWait(o)
	r.wake()
}

// newOp records an operation the code asks for.
func (r *replayer) newOp(kind opKind, prefix, name string) *op {
	r.enter(describeCall(kind, name))
	o := &op{kind: kind, id: r.det.id(prefix), index: len(r.ops), name: name}
	r.takePatches(o)
	r.ops = append(r.ops, o)
	r.byID[o.id] = o
	switch kind {
	case opHook:
		r.hooks++
	case opWait:
		r.waits++
	}
	return o
}
