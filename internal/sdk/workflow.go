package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"runtime"
	"time"

	"github.com/skeinflow/skein/internal/engine"
)

// Context is what a workflow function sees: deterministic time, randomness
// and IDs, and the means to call steps, sleep and wait for hooks. Workflow
// code is replayed, so it must be deterministic: no I/O, no time.Now, no
// goroutines calling workflow functions, no ranging over maps to decide
// what to call. Side effects belong in steps.
type Context interface {
	// Now returns the workflow's time: the run's start, advanced as the
	// events the workflow has seen were recorded. It is the same on replay.
	Now() time.Time
	// Rand returns a random source seeded by the run ID. Anyone who knows
	// the run ID can compute what it draws, and it is not cryptographically
	// strong: never draw secrets from it (a hook's generated token is one).
	Rand() *rand.Rand
	// NewID returns a deterministic unique ID (a ULID), derived from the
	// run ID: an identifier, not a secret.
	NewID() string
	// Workflow returns the run's metadata.
	Workflow() WorkflowMetadata
	// Logger returns a logger for the workflow code, with the run ID and
	// workflow name attached. It stays silent while the code re-executes
	// what the run's log already recorded (the lines before the last step,
	// hook, wait or end the code caused), so a line is printed when the code
	// first runs past the recorded history: on a run's first execution,
	// after a step result or hook payload arrives, after a wait elapses.
	// Within one worker session each line prints at most once even when the
	// engine rebuilds the workflow; across executions a line can repeat if
	// the execution that printed it recorded nothing after it (a crash or a
	// lost lease), never because the run was merely resumed.
	Logger() *slog.Logger

	impl() *wfContext
}

type wfContext struct {
	ec       *engine.Context
	reg      *Registry
	logger   *slog.Logger
	children int
	// starts are the skein.start-child steps of the children the run
	// started: the run ends only once each is recorded (awaitChildStarts).
	starts []*engine.Future
	// comps are the steps called whose compensation has not run yet
	// (Compensate).
	comps []*compEntry
}

// awaitChildStarts waits until the step that started each child run is
// recorded. A child can end and deliver its outcome to the parent before
// its start step's outcome is in the parent's log (the step ran in the
// background and was slower than the child, or its executor was lost and
// the step runs again, finding the child by its key); a parent that ended
// first would leave the step open for good. The wait adds no event and
// comes after every operation the code asked for, so a run in flight
// replays as it ran.
func (c *wfContext) awaitChildStarts() {
	if len(c.starts) == 0 {
		return
	}
	next := 0 // c.starts[:next] are done: futures settle for good
	c.ec.Await(func() bool {
		for ; next < len(c.starts); next++ {
			if !c.starts[next].Done() {
				return false
			}
		}
		return true
	})
}

func (c *wfContext) Now() time.Time   { return c.ec.Now() }
func (c *wfContext) Rand() *rand.Rand { return c.ec.Rand() }
func (c *wfContext) NewID() string    { return c.ec.NewID() }
func (c *wfContext) impl() *wfContext { return c }

func (c *wfContext) Workflow() WorkflowMetadata {
	return WorkflowMetadata{WorkflowName: c.ec.WorkflowName(), RunID: c.ec.RunID(), StartedAt: c.ec.StartedAt()}
}

func (c *wfContext) Logger() *slog.Logger {
	if c.logger == nil {
		c.logger = slog.New(replayAware{h: c.ec.Logger().Handler(), ec: c.ec}).With("run", c.ec.RunID(), "workflow", c.ec.WorkflowName())
	}
	return c.logger
}

// replayAware drops the records of lines the engine says were printed
// already (see engine.Context.LogLine).
type replayAware struct {
	h  slog.Handler
	ec *engine.Context
}

func (r replayAware) Enabled(ctx context.Context, l slog.Level) bool {
	return r.h.Enabled(ctx, l)
}
func (r replayAware) Handle(ctx context.Context, rec slog.Record) error {
	if !r.ec.LogLine(lineDigest(rec)) {
		return nil
	}
	return r.h.Handle(ctx, rec)
}

// lineDigest identifies a log line by its level, message and attributes
// (not its time), so that the engine can tell a line it printed from
// another one at the same position.
func lineDigest(rec slog.Record) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s", rec.Level, rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(h, "\x00%s=%s", a.Key, a.Value)
		return true
	})
	return h.Sum64()
}
func (r replayAware) WithAttrs(as []slog.Attr) slog.Handler {
	return replayAware{h: r.h.WithAttrs(as), ec: r.ec}
}
func (r replayAware) WithGroup(g string) slog.Handler {
	return replayAware{h: r.h.WithGroup(g), ec: r.ec}
}

// Workflow is a workflow: deterministic Go that calls steps, sleeps and
// waits, and survives crashes and redeploys by replaying its log.
type Workflow[I, O any] struct {
	name string
	fn   func(Context, I) (O, error)
	// cleanup is the hook WithCleanup set (cleanup.go).
	cleanup        func(context.Context, *Cleanup[I, O]) error
	cleanupTimeout time.Duration
	// compensateOnFailure is set by WithCompensateOnFailure (compensation.go).
	compensateOnFailure bool
}

// New defines a workflow. Register it with a Registry before running it.
func New[I, O any](name string, fn func(ctx Context, in I) (O, error)) *Workflow[I, O] {
	return &Workflow[I, O]{name: name, fn: fn}
}

// Name returns the workflow's name.
func (w *Workflow[I, O]) Name() string { return w.name }

func (w *Workflow[I, O]) isWorkflow() {}

// Start starts a run of the workflow with input. With WithIdempotencyKey,
// starting again with the same key and input returns the first run (the
// same key with another input is a *RequestError of Kind
// world.ErrConflict). Like
// Client.Start, it refuses a workflow the client's Registry does not hold
// with a *RequestError of Kind ErrUnknownWorkflow and creates no run (a client without a
// Registry, or StartUnregistered, starts any workflow). Inside a step, a
// nil client means the step's own, and the new run records the step's run
// as its parent.
func (w *Workflow[I, O]) Start(ctx context.Context, c *Client, in I, opts ...StartOption) (*Run[O], error) {
	if c == nil {
		c = ClientFrom(ctx)
		if c == nil {
			return nil, fmt.Errorf("workflow: Start %q: nil client outside a step", w.name)
		}
	}
	o := c.startOptions(ctx, opts)
	if err := c.checkKnown(w.name, o); err != nil {
		return nil, err
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, badInput(&SerializationError{What: "workflow input", Err: err})
	}
	id, existed, err := c.start(ctx, w.name, b, o)
	if err != nil {
		return nil, err
	}
	return &Run[O]{c: c, id: id, existed: existed}, nil
}

// Get returns the run runID of this workflow.
func (w *Workflow[I, O]) Get(c *Client, runID string) *Run[O] { return &Run[O]{c: c, id: runID} }

// Go starts the workflow as a child of the calling workflow and returns a
// future of its result. The parent waits on a hook with a deterministic
// token that the child resumes with its outcome when it ends. The token
// ends with a tag derived from the parent's run secret, so that nobody who
// only knows the run ID can resume it with a forged outcome (runs created
// before run secrets keep their untagged tokens). The calling run does not
// end before the step that starts the child is recorded, even when the
// child's outcome arrives first.
func (w *Workflow[I, O]) Go(ctx Context, in I) Future[O] {
	c := ctx.impl()
	b, err := json.Marshal(in)
	if err != nil {
		return failed[O](&SerializationError{What: "child workflow input", Err: err})
	}
	c.children++
	token := fmt.Sprintf("%s%s:%d", childTokenPrefix, c.ec.RunID(), c.children)
	if tag := c.ec.SecretTag(token); tag != "" {
		token += ":" + tag
	}
	root := c.ec.RunID()
	var ec engine.ExecutionContext
	if json.Unmarshal(c.ec.ExecutionContext(), &ec) == nil && ec.RootRunID != "" {
		root = ec.RootRunID
	}
	h := c.ec.Hook(token, nil, false)
	h.DisposeOnReceipt() // the outcome is its one payload
	start, err := json.Marshal(childStart{
		Workflow: w.name, Input: b, ParentRunID: c.ec.RunID(), RootRunID: root, NotifyToken: token,
	})
	if err != nil {
		return failed[O](&SerializationError{What: "child workflow input", Err: err})
	}
	f := c.ec.Step(startChildStep, start)
	c.starts = append(c.starts, f)
	return Future[O]{p: &childPromise{start: &stepPromise{f: f, name: startChildStep, reg: c.reg}, hook: h, reg: c.reg}}
}

// Call runs the workflow as a child of the calling workflow and waits for
// its result.
func (w *Workflow[I, O]) Call(ctx Context, in I) (O, error) { return w.Go(ctx, in).Get(ctx) }

func (w *Workflow[I, O]) register(r *Registry) error {
	where := funcLocation(w.fn)
	check := func(raw json.RawMessage, strict bool) error {
		var in I
		if !strict {
			return unmarshal(raw, &in)
		}
		return checkStrict(raw, &in)
	}
	return r.addWorkflow(&engine.Workflow{
		Name: w.name,
		Fn: func(ec *engine.Context, raw json.RawMessage) (json.RawMessage, error) {
			var in I
			if err := unmarshal(raw, &in); err != nil {
				return nil, &engine.Failure{Data: r.encode(&SerializationError{What: "workflow input", Decode: true, Err: err})}
			}
			wc := &wfContext{ec: ec, reg: r}
			out, err := w.fn(wc, in)
			wc.awaitChildStarts()
			if err != nil {
				d := r.encode(err)
				if d.Stack == "" {
					d.Stack = fmt.Sprintf("returned by workflow %q (%s)", w.name, where)
				}
				return nil, &engine.Failure{Data: d}
			}
			b, err := json.Marshal(out)
			if err != nil {
				return nil, &engine.Failure{Data: r.encode(&SerializationError{What: "workflow return value", Err: err})}
			}
			return b, nil
		},
		Cleanup:             w.engineCleanup(),
		CleanupTimeout:      w.cleanupTimeout,
		CompensateOnFailure: w.compensateOnFailure,
	}, check)
}

func funcLocation(fn any) string {
	f := runtime.FuncForPC(reflect.ValueOf(fn).Pointer())
	if f == nil {
		return "unknown"
	}
	file, line := f.FileLine(f.Entry())
	return fmt.Sprintf("%s at %s:%d", f.Name(), file, line)
}
