package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skeinflow/skein/internal/cfgerr"
	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/internal/sealmark"
	"github.com/skeinflow/skein/world"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// World is where runs live (required).
	World world.World
	// Registry, when set, reads back the error types registered with it,
	// and Start by name refuses a workflow it does not hold (see
	// StartUnregistered).
	Registry *Registry
	// Logger receives operational messages (default: discarded).
	Logger *slog.Logger
	// Version is recorded as the code version of the runs Start starts
	// (RunInfo.Version): at most 128 bytes of text without control
	// characters, e.g. a release name or a commit. Default: the VCS
	// revision the program was built from (12 characters, "+dirty" for
	// uncommitted changes), else its module version, else none.
	Version string
}

// Client starts runs and talks to them: status, result, cancellation,
// streams, hooks. It is safe for concurrent use.
type Client struct {
	w   world.World
	reg *Registry
	log *slog.Logger
	now func() time.Time
	ids *world.IDSource
	cfg ClientConfig
	// pollEvery bounds the wait between two looks at a run (Result, a polling
	// Subscribe).
	pollEvery time.Duration
	// known: the Registry was given, so Start by name checks names in it.
	known bool
}

// defaultResultPoll bounds the wait between two looks at a run awaited by
// Result (the first looks are quicker), and between two looks of a
// Subscribe that polls.
const defaultResultPoll = 100 * time.Millisecond

// NewClient returns a client for cfg.World.
func NewClient(cfg ClientConfig, opts ...knobs.Option) (*Client, error) {
	if cfg.World == nil {
		return nil, cfgerr.Invalid(errors.New("client: Config.World is required"))
	}
	k := knobs.Apply(opts)
	if k.Now == nil {
		k.Now = time.Now
	}
	if k.ResultPoll <= 0 {
		k.ResultPoll = defaultResultPoll
	}
	known := cfg.Registry != nil
	if !known {
		cfg.Registry = NewRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	v, err := resolveVersion("client: Config.Version", cfg.Version)
	if err != nil {
		return nil, cfgerr.Invalid(err)
	}
	cfg.Version = v
	return &Client{w: cfg.World, reg: cfg.Registry, log: cfg.Logger, now: k.Now, ids: world.NewIDSource(k.Now, k.Entropy), cfg: cfg,
		pollEvery: k.ResultPoll, known: known}, nil
}

// ClientWorld returns the World c reads and writes (for Skein's own
// packages: the public Client does not hand its World out).
func ClientWorld(c *Client) world.World { return c.w }

type clientKey struct{}

// ClientFrom returns the client available in a step's context: the worker's
// client, or one over the step's World. Nil outside a step.
func ClientFrom(ctx context.Context) *Client {
	if c, ok := ctx.Value(clientKey{}).(*Client); ok {
		return c
	}
	if info, ok := engine.StepInfoFrom(ctx); ok {
		c, err := NewClient(ClientConfig{World: info.World}, knobs.WithNow(info.Now))
		if err == nil {
			return c
		}
	}
	return nil
}

// Start starts a run of the named workflow with input (encoded as JSON)
// and returns its ID. Called in a step, the new run records the step's run
// as its parent. An input that does not encode (a json.RawMessage that is
// no JSON, a channel) is an error matching world.ErrInvalid that holds a
// *SerializationError; no run is created.
//
// A client given a Registry checks the start before it creates the run: a
// name the registry does not hold is a *RequestError of Kind
// ErrUnknownWorkflow, and an input whose JSON does not decode into the
// workflow's input type (42 for a workflow that takes a struct) is an
// *RequestError of Kind world.ErrInvalid; neither creates a run. The
// StartUnregistered option, for a workflow that workers of another service
// run, skips both checks, and a client without a Registry makes neither:
// its input is checked only when the run decodes it, and one that does not
// decode fails the run. Workflow.Start takes an input of the workflow's
// own type instead.
//
// With WithIdempotencyKey, a key that already started a run of the
// workflow with the same input (compared as JSON values: spacing and the
// order of object members do not matter) returns that run (ReportExisting
// tells); the same key with another input or another workflow is an
// *RequestError of Kind world.ErrConflict, and no run is
// created.
func (c *Client) Start(ctx context.Context, workflowName string, input any, opts ...StartOption) (string, error) {
	o := c.startOptions(ctx, opts)
	b, err := json.Marshal(input)
	if err != nil {
		return "", badInput(&SerializationError{What: "workflow input", Err: err})
	}
	if err := c.checkStart(workflowName, b, o); err != nil {
		return "", err
	}
	id, _, err := c.start(ctx, workflowName, b, o)
	return id, err
}

// checkKnown refuses a workflow name the client's Registry does not hold,
// unless the client has no Registry or the start says StartUnregistered.
func (c *Client) checkKnown(name string, o startOptions) error {
	if c.known && !o.unregistered && name != "" {
		if _, ok := (engineRegistry{r: c.reg}).Workflow(name); !ok {
			return &RequestError{Kind: ErrUnknownWorkflow, Workflow: name}
		}
	}
	return nil
}

// startOptions applies opts; called in a step, the run records the step's
// run as its parent.
func (c *Client) startOptions(ctx context.Context, opts []StartOption) startOptions {
	var o startOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.lineage == nil {
		if info, ok := engine.StepInfoFrom(ctx); ok {
			root := info.RunID
			var parent engine.ExecutionContext
			if json.Unmarshal(info.ExecutionContext, &parent) == nil && parent.RootRunID != "" {
				root = parent.RootRunID
			}
			o.lineage = &engine.ExecutionContext{ParentRunID: info.RunID, RootRunID: root}
		}
	}
	return o
}

// start creates the run, or finds the run its idempotency key already
// started (existed), and wakes it unless it has finished.
func (c *Client) start(ctx context.Context, name string, input json.RawMessage, o startOptions) (id string, existed bool, err error) {
	if name == "" {
		return "", false, fmt.Errorf("workflow: Start: empty workflow name: %w", world.ErrInvalid)
	}
	if o.keySet && o.key == "" {
		return "", false, fmt.Errorf("workflow: Start %q: empty idempotency key (leave WithIdempotencyKey out to start without one): %w", name, world.ErrInvalid)
	}
	if !o.sdkAttrs {
		if err := checkCallerAttributes(world.EventRunCreated, "", o.attributes); err != nil {
			return "", false, fmt.Errorf("workflow: Start %q: %w", name, err)
		}
	}
	defer func() {
		if o.existed != nil && err == nil {
			*o.existed = existed
		}
	}()
	var execCtx json.RawMessage
	if tc := engine.TraceCarrier(ctx); tc != nil {
		if o.lineage == nil {
			o.lineage = &engine.ExecutionContext{}
		}
		o.lineage.Trace = tc
	}
	if o.lineage != nil {
		b, err := json.Marshal(o.lineage)
		if err != nil {
			return "", false, err
		}
		execCtx = b
	}
	version := c.cfg.Version
	if o.version != nil {
		if err := world.CheckVersion(*o.version); err != nil {
			return "", false, fmt.Errorf("workflow: Start: WithVersion: %w", err)
		}
		version = *o.version
	}
	runID := o.runID
	if runID == "" {
		runID = c.ids.New(world.PrefixRun)
	}
	_, err = c.w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{{Data: &world.RunCreated{
		WorkflowName: name, Input: input, ExecutionContext: execCtx, Attributes: o.attributes, IdempotencyKey: o.key,
		Secret: engine.NewRunSecret(), Version: version,
	}}}})
	// The first start's wake is deduplicated by key; a later start of an
	// unfinished run wakes it again without one, so a start after a crash
	// resumes the run at once (a redundant wake is harmless: the run lease
	// serializes continuations).
	wakeKey := engine.StartKey(runID)
	var exists *world.RefusalError // a run exists: its ID is Entity
	switch {
	case errors.As(err, &exists) && exists.Kind == world.ErrConflict && exists.EventType == world.EventRunCreated && o.key != "":
		run, gerr := c.existingRun(ctx, exists.Entity, name, input, o)
		if gerr != nil {
			return "", false, gerr
		}
		if run.Status.Terminal() {
			return run.RunID, true, nil
		}
		runID, existed, wakeKey = run.RunID, true, ""
	case err != nil:
		return "", false, startError(name, input, execCtx, err)
	}
	if err := engine.Wake(ctx, c.w, c.now, runID, wakeKey); err != nil {
		return runID, existed, fmt.Errorf("workflow: start %q: enqueue run %s: %w", name, runID, err)
	}
	return runID, existed, nil
}

// RunInfo is a run as stored.
type RunInfo struct {
	ID           string
	WorkflowName string
	Status       world.RunStatus
	// Input and Output are the run's payloads as the Client's World
	// returned them: for an encrypted run read through a World without its
	// key (see encrypt.Wrap), their sealed envelopes, not JSON of the
	// workflow's types (Result refuses to decode those).
	Input  json.RawMessage
	Output json.RawMessage
	// Err is the run's error (typed again) when it failed.
	Err error
	// Hold says why a held run (world.RunStatusHeld) is held, nil otherwise; its
	// Code (REPLAY_DIVERGENCE) is the held run's error code.
	Hold *HoldInfo
	// ErrorCode is the error code of a failed run (USER_ERROR,
	// RUNTIME_ERROR, REPLAY_DIVERGENCE after FailRun on a held run, ...):
	// empty for any other run, a held one included, which has not failed.
	ErrorCode      string
	CancelReason   string
	IdempotencyKey string
	// Version is the version of the code that started the run (the
	// starting Client's client.Config.Version), "" when none was recorded.
	Version     string
	Attributes  map[string]string
	ParentRunID string
	RootRunID   string
	CreatedAt   time.Time
	StartedAt   time.Time
	CompletedAt time.Time
	// DeactivatedAt is when the finished run came to rest (see
	// WaitDeactivated), zero until then.
	DeactivatedAt time.Time
	// Cleanup is the state of a completed run's cleanup hook
	// (world.CleanupPending, world.CleanupDone, world.CleanupFailed), empty without one.
	Cleanup string
	// Compensations says how the run's compensations went (see
	// WithCompensation); zero when it has none.
	Compensations CompensationInfo
}

func (c *Client) runInfo(r *world.Run) *RunInfo {
	info := &RunInfo{
		ID: r.RunID, WorkflowName: r.WorkflowName, Status: r.Status, Input: r.Input, Output: r.Output,
		ErrorCode: r.ErrorCode, CancelReason: r.CancelReason, IdempotencyKey: r.IdempotencyKey, Version: r.Version,
		Attributes: r.Attributes, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, CompletedAt: r.CompletedAt,
		DeactivatedAt: r.DeactivatedAt, Cleanup: r.Cleanup, Compensations: compensationInfo(r),
	}
	if r.Error != nil {
		info.Err = c.reg.decode(r.Error)
	}
	info.Hold = c.holdInfo(r.Hold)
	var ec engine.ExecutionContext
	if len(r.ExecutionContext) > 0 && json.Unmarshal(r.ExecutionContext, &ec) == nil {
		info.ParentRunID, info.RootRunID = ec.ParentRunID, ec.RootRunID
	}
	return info
}

// GetRun returns a run. A missing run is an error matching world.ErrNotFound.
func (c *Client) GetRun(ctx context.Context, runID string) (*RunInfo, error) {
	r, err := c.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		return nil, err
	}
	return c.fullRunInfo(ctx, r)
}

// Result waits for a run to end and decodes its output into out (which may
// be nil). A failed run returns a *RunFailedError, a cancelled one
// ErrRunCancelled. A held run (world.RunStatusHeld) has not ended: Result waits on
// until it is resumed and ends, or until ctx is done. Result returns as
// soon as the outcome is recorded, while steps the run left running may
// still be finishing (see WaitDeactivated), except that for a completed
// run whose workflow has a cleanup hook (WithCleanup) it also waits for
// the hook's outcome. The output of an encrypted run read through a World
// without its key (see encrypt.Wrap) is not decoded: Result returns an
// error matching world.ErrKeyUnavailable that names the run and the key.
func (c *Client) Result(ctx context.Context, runID string, out any) error {
	r, err := c.await(ctx, runID)
	if err != nil {
		return err
	}
	switch r.Status {
	case world.RunStatusCancelled:
		return ErrRunCancelled
	case world.RunStatusFailed:
		return &RunFailedError{RunID: r.RunID, Code: r.ErrorCode, Cause: c.reg.decode(r.Error)}
	}
	if out == nil || len(r.Output) == 0 {
		return nil
	}
	if err := sealedOutput(r); err != nil {
		return err
	}
	if err := json.Unmarshal(r.Output, out); err != nil {
		return &SerializationError{What: "run output", Err: err}
	}
	return nil
}

// sealedOutput returns an error matching world.ErrKeyUnavailable, naming
// the run and the key, when r (as the client's World returned it) is a
// sealed run whose output its World could not open: decoded, the envelope
// would be taken for the output (a struct with none of its fields, no
// error).
func sealedOutput(r *world.Run) error {
	kid, sealed := sealmark.Sealed(r.Input, r.ExecutionContext)
	if !sealed {
		return nil
	}
	if k, ok := sealmark.KeyID(r.Output); ok {
		kid = k
	}
	return &sealmark.KeylessError{KeyID: kid, RunID: r.RunID,
		Read: "the run's output is encrypted, and this client's World has no key to open it (see encrypt.Wrap; skein -keys)"}
}

// await polls a run until it ends: its outcome is recorded and, for a
// completed run whose workflow has a cleanup hook, the hook's outcome too.
func (c *Client) await(ctx context.Context, runID string) (*world.Run, error) {
	return c.poll(ctx, runID, func(r *world.Run) bool {
		return r.Status.Terminal() && r.Cleanup != world.CleanupPending
	})
}

// poll reads a run until done says it is what the caller waits for.
func (c *Client) poll(ctx context.Context, runID string, done func(*world.Run) bool) (*world.Run, error) {
	delay := time.Millisecond
	for {
		r, err := c.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
		if err != nil {
			return nil, err
		}
		if done(r) {
			return r, nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(delay*2, c.pollEvery)
	}
}

// Cancel cancels a pending, running or held run: its pending steps are refused,
// its running steps see their context cancelled, its hooks and waits are
// removed. Cancelling a cancelled run is not an error; a completed or failed
// one is (matching world.ErrConflict). Cancellation cascades: once a worker
// has run the side effects of the run's end (moments later), the child
// runs it started (Workflow.Call, Workflow.Go) that have not ended are
// cancelled too, with the reason "parent run ... was cancelled", and
// theirs in turn; children that ended keep their outcome. Runs started
// with Workflow.Start or Client.Start from a step are not children: they
// run on.
//
// With CancelCompensating, the run's completed steps are compensated after
// the cancellation (see WithCompensation), as a failed run of a workflow
// defined WithCompensateOnFailure is.
//
// Cancel reads the run's whole log first and appends fenced on it (read
// again when a worker commits in between): a run whose stored log the
// World finds damaged (items deleted behind it) is an error matching
// world.ErrCorrupt, and nothing is written.
func (c *Client) Cancel(ctx context.Context, runID, reason string, opts ...CancelOption) error {
	var o cancelOptions
	for _, opt := range opts {
		opt(&o)
	}
	// Fenced on a checked read of the run's log (it races a live worker's
	// commits, and is read again when one lands): a damaged run gets
	// nothing written and an error matching world.ErrCorrupt.
	res, err := engine.AppendFenced(ctx, c.w, &world.AppendParams{RunID: runID, Events: []world.EventInput{{Data: &world.RunCancelled{Reason: reason, Compensate: o.compensate}}}})
	if err != nil {
		return fmt.Errorf("workflow: cancel run %s: %w", runID, err)
	}
	engine.ObserveCommit(ctx, c.log, nil, res)
	// Let the engine run the side effects of the run's end.
	return engine.Wake(ctx, c.w, c.now, runID, engine.CancelKey(runID))
}

// ListRunsOptions filters and pages ListRuns.
type ListRunsOptions struct {
	WorkflowName string
	Status       world.RunStatus
	// Attribute, when set, lists only the runs with that attribute; an
	// invalid key or value is an error matching world.ErrInvalid.
	Attribute *world.AttributeFilter
	Limit     int
	Cursor    string
}

// RunPage is a page of runs, newest first.
type RunPage struct {
	Runs    []*RunInfo
	Cursor  string
	HasMore bool
}

// ListRuns lists runs, newest first.
func (c *Client) ListRuns(ctx context.Context, opts ListRunsOptions) (*RunPage, error) {
	p, err := c.w.ListRuns(ctx, &world.ListRunsParams{
		WorkflowName: opts.WorkflowName, Status: opts.Status, Attribute: opts.Attribute,
		Pagination: world.Pagination{Limit: opts.Limit, Cursor: opts.Cursor},
	})
	if err != nil {
		return nil, err
	}
	out := &RunPage{Cursor: p.Cursor, HasMore: p.HasMore, Runs: make([]*RunInfo, len(p.Items))}
	for i := range p.Items {
		out.Runs[i] = c.runInfo(&p.Items[i])
	}
	return out, nil
}

// HookInfo is an active hook.
type HookInfo struct {
	ID        string
	RunID     string
	Token     string
	Metadata  json.RawMessage
	IsWebhook bool
	CreatedAt time.Time
}

func hookInfo(h *world.Hook) *HookInfo {
	return &HookInfo{ID: h.HookID, RunID: h.RunID, Token: h.Token, Metadata: h.Metadata, IsWebhook: h.IsWebhook, CreatedAt: h.CreatedAt}
}

// ResumeHook sends payload to the hook holding token and wakes its run. A
// token no active hook holds is a *RequestError of Kind
// world.ErrNotFound. The client does not
// know the type the hook expects: a payload that does not decode as it is
// recorded all the same and reaches the workflow as a *SerializationError
// (Token and HookID set). A
// hook of a sealed run (package encrypt) is refused, with an error that
// matches world.ErrKeyUnavailable and nothing written, when the client's
// World does not seal: the payload would be stored in clear.
func (c *Client) ResumeHook(ctx context.Context, token string, payload any) (*HookInfo, error) {
	if IsInternalToken(token) {
		return nil, fmt.Errorf("%w: hook %q is the engine's own: a child run's outcome arrives on it, and only the engine may resume it", world.ErrInvalid, token)
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, badInput(&SerializationError{What: "hook payload", Err: err})
	}
	h, err := engine.ResumeHook(ctx, c.w, c.now, token, b)
	if err != nil {
		if errors.Is(err, world.ErrNotFound) {
			return nil, &RequestError{Kind: world.ErrNotFound, Token: token}
		}
		return nil, err
	}
	return hookInfo(h), nil
}

// GetHookByToken returns the active hook holding token, or a
// *RequestError of Kind world.ErrNotFound.
func (c *Client) GetHookByToken(ctx context.Context, token string) (*HookInfo, error) {
	h, err := c.w.GetHookByToken(ctx, &world.GetHookByTokenParams{Token: token})
	if err != nil {
		if errors.Is(err, world.ErrNotFound) {
			return nil, &RequestError{Kind: world.ErrNotFound, Token: token}
		}
		return nil, err
	}
	return hookInfo(h), nil
}

// Run is a handle on a run whose output has type O.
type Run[O any] struct {
	c       *Client
	id      string
	existed bool
}

// ID returns the run's ID.
func (r *Run[O]) ID() string { return r.id }

// Existed reports whether Start found the run its idempotency key had
// already started instead of creating one (an unfinished run found this way
// was woken, so it resumes).
func (r *Run[O]) Existed() bool { return r.existed }

// Info returns the run as stored.
func (r *Run[O]) Info(ctx context.Context) (*RunInfo, error) { return r.c.GetRun(ctx, r.id) }

// Result waits for the run to end and returns its output. A failed run
// returns a *RunFailedError, a cancelled one ErrRunCancelled.
func (r *Run[O]) Result(ctx context.Context) (O, error) {
	var out O
	err := r.c.Result(ctx, r.id, &out)
	return out, err
}

// Cancel cancels the run (see Client.Cancel).
func (r *Run[O]) Cancel(ctx context.Context, reason string, opts ...CancelOption) error {
	return r.c.Cancel(ctx, r.id, reason, opts...)
}

// startError is the refusal of a start: an input over the payload limit
// says so in the caller's terms (its size and the limit), matching
// world.ErrLimitExceeded and *world.LimitError; any other refusal is
// wrapped as the World gave it.
func startError(name string, input, execCtx json.RawMessage, err error) error {
	var le *world.LimitError
	if !errors.As(err, &le) || le.Limit != "payload" || len(input) < len(execCtx) {
		return fmt.Errorf("workflow: start %q: %w", name, err)
	}
	stored := ""
	if le.Size != int64(len(input)) {
		stored = fmt.Sprintf(" (%d as stored)", le.Size)
	}
	return &startLimitError{msg: fmt.Sprintf("workflow: start %q: the input of %d bytes%s is over the limit of %d bytes a payload may take (world.Limits.MaxPayload)",
		name, len(input), stored, le.Max), le: le}
}

// startLimitError is a start refused for its input's size.
type startLimitError struct {
	msg string
	le  *world.LimitError
}

func (e *startLimitError) Error() string { return e.msg }

// Unwrap returns the limit's refusal (errors.Is world.ErrLimitExceeded).
func (e *startLimitError) Unwrap() error { return e.le }
