package sdk

import "github.com/skeinflow/skein/internal/engine"

// StartOption tunes Start.
type StartOption func(*startOptions)

type startOptions struct {
	unregistered bool
	key          string
	keySet       bool // WithIdempotencyKey was given, even with ""
	anyInput     bool // the key's run is this start's whatever its input (a schedule's firing)
	existed      *bool
	attributes   map[string]string
	sdkAttrs     bool // attributes are the SDK's own (a schedule's firing), reserved keys allowed
	lineage      *engine.ExecutionContext
	version      *string
	strict       bool   // StrictInput
	runID        string // the run's ID when the starter derives it (a child's, engine.ChildRunID); else a fresh one
}

// StrictInput makes a start check its input more strictly than the run
// decodes it (the run ignores what its type does not have, so that runs
// started before a change of the type still decode): a member the
// workflow's input type does not have (a misspelled field, at any depth)
// is refused, and so is no input (empty or null) for a struct type with
// fields, which the run would only see as its zero value ({} asks for
// it). Both are a *RequestError of Kind world.ErrInvalid and create no
// run. The HTTP API starts
// runs this way; it takes effect with a client given a Registry.
func StrictInput() StartOption { return func(o *startOptions) { o.strict = true } }

// WithIdempotencyKey makes Start idempotent: starting again with the same
// key, workflow and input returns the run the first call started
// (Run.Existed, or ReportExisting for Client.Start, tells), so a start can
// be retried safely. The key names that one start: the same key with
// another input (compared as JSON values) or another workflow is an
// *RequestError matching world.ErrConflict, not the first run
// with the new input dropped. An empty key is refused: Start
// returns an error matching world.ErrInvalid and creates no run (leave the
// option out to start without a key).
func WithIdempotencyKey(key string) StartOption {
	return func(o *startOptions) { o.key, o.keySet = key, true }
}

// ReportExisting makes Start set *existed: true when its idempotency key
// named a run started before, whose ID Start returns instead of starting
// one, false when Start created the run.
func ReportExisting(existed *bool) StartOption { return func(o *startOptions) { o.existed = existed } }

// StartUnregistered lets Client.Start by name start a workflow that the
// client's Registry does not hold, for a workflow that workers of another
// service run. Without it, a client given a Registry refuses such a name
// with a *RequestError matching ErrUnknownWorkflow, and a client without one starts any name.
func StartUnregistered() StartOption { return func(o *startOptions) { o.unregistered = true } }

// WithVersion records version as the new run's code version in place of
// the client's (client.Config.Version): for a tool that starts runs on
// behalf of other code, such as one rerunning a run of an older version.
// "" records none.
func WithVersion(version string) StartOption {
	return func(o *startOptions) { o.version = &version }
}

// WithAttributes records string attributes with the run (within the
// bounds SetAttributes gives, keys starting with ReservedPrefix excluded;
// Start refuses others with an error matching world.ErrInvalid and creates
// no run).
func WithAttributes(attrs map[string]string) StartOption {
	return func(o *startOptions) { o.attributes = attrs }
}
