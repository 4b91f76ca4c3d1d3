package client

import (
	"context"

	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/internal/sdk"
)

// CleanupPanicked: the hook panicked.
const CleanupPanicked = sdk.CleanupPanicked

// CleanupReturnedError: the hook returned an error (CleanupError.Cause).
const CleanupReturnedError = sdk.CleanupReturnedError

// CleanupTimedOut: the hook ran past its workflow.CleanupOptions.Timeout.
const CleanupTimedOut = sdk.CleanupTimedOut

// ErrCleanupPending is CleanupErr's answer for a completed run whose
// cleanup hook has not recorded its outcome yet.
var ErrCleanupPending = sdk.ErrCleanupPending

// ErrUnknownWorkflow is the Kind of a *RequestError for a workflow name the
// Registry does not hold; errors.Is matches it.
var ErrUnknownWorkflow = sdk.ErrUnknownWorkflow

// CancelOption tunes Client.Cancel.
type CancelOption = sdk.CancelOption

// CheckPatchParams names a patch of a workflow.
//
// Its fields:
//   - WorkflowName.
//   - PatchID.
type CheckPatchParams = sdk.CheckPatchParams

// CleanupError is the recorded failure of a run's cleanup hook. The run
// itself stays completed with its result.
//
// Its methods (internal/sdk documents each in full):
//
//   - Error returns the error's text.
//   - Unwrap returns what the error wraps.
//
// Its fields:
//   - RunID.
//   - Kind is CleanupReturnedError, CleanupPanicked or CleanupTimedOut.
//   - Message.
//   - Cause is the hook's error, typed again through the Registry, for CleanupReturnedError.
type CleanupError = sdk.CleanupError

// Client starts runs and talks to them: status, result, cancellation,
// streams, hooks. It is safe for concurrent use.
//
// Its methods (internal/sdk documents each in full):
//
//   - Cancel cancels a pending, running or held run.
//   - CheckPatch reports which runs of a workflow not ended may still need the old path of a patch.
//   - CleanupErr reports how a run's cleanup hook ended.
//   - FailRun ends a pending, running or held run as failed.
//   - GetHookByToken returns the active hook holding token, or a *RequestError of Kind world.ErrNotFound.
//   - GetRun returns a run.
//   - ListRuns lists runs, newest first.
//   - ListStreams returns the namespaces of a run's streams ("" for the default one), sorted.
//   - ReadStream reads a run's stream live: every chunk from opts.Start as it is written.
//   - ReadStreamPage reads the chunks of a run's stream written so far from opts.Start.
//   - Result waits for a run to end and decodes its output into out (which may be nil).
//   - ResumeHook sends payload to the hook holding token and wakes its run.
//   - RetryRun replays a held run now instead of at its next retry.
//   - SetAttributes merges attrs into the run's attributes.
//   - Start starts a run of the named workflow with input (encoded as JSON) and returns its ID.
//   - StreamInfo returns the state of a run's stream.
//   - Subscribe follows runs as they commit: the events of one run.
//   - WaitDeactivated waits until the run has come to rest after its end (run_deactivated).
type Client = sdk.Client

// Config configures a Client.
//
// Its fields:
//   - World is where runs live (required).
//   - Registry, when set, reads back the error types registered with it, and Start by name refuses a workflow it does not hold (see StartUnregistered).
//   - Logger receives operational messages (default: discarded).
//   - Version is recorded as the code version of the runs Start starts (RunInfo.Version): at most 128 bytes of text without control characters, e.g. a release name or a commit.
type Config = sdk.ClientConfig

// CompensationInfo says how a run's compensations went.
//
// Its methods (internal/sdk documents each in full):
//
//   - Status is "" when the run has had no compensation.
//
// Its fields:
//   - Requested is set when the run's end asked for its completed steps to be compensated (WithCompensateOnFailure, CancelCompensating).
//   - Owed counts the completed steps that declared a compensation which has not started.
//   - Running: Owed counts the completed steps that declared a compensation which has not started.
//   - Succeeded: Owed counts the completed steps that declared a compensation which has not started.
//   - Failed: Owed counts the completed steps that declared a compensation which has not started.
//   - Failures are the compensations that failed for good, each a *CompensationError naming the step it was to undo, in the order the compensations ran (the most recently completed step first), as Compensate joins them (Client.GetRun, Run.Info and WaitDeactivated fill it in; ListRuns does not).
type CompensationInfo = sdk.CompensationInfo

// FailOption tunes Client.FailRun.
type FailOption = sdk.FailOption

// HoldInfo says why a held run (world.RunStatusHeld) is held: its replay diverged
// from its log, because the code deployed asks for other steps, hooks or
// timers than those the run recorded, or the code calls a step that the
// deployment's Registry does not hold. Nothing runs for it until its code
// fits again: the worker retries it at workflow.RetryAt (1 minute after
// the first hold, doubling up to an hour) and at once on Client.RetryRun,
// so deploying compatible code resumes it. Client.Cancel and
// Client.FailRun end it.
//
// Its fields:
//   - Code is the hold's error code: REPLAY_DIVERGENCE, or DEPLOYMENT_MISMATCH for a step not registered.
//   - Err is the divergence, naming what the log has and what the code asks for, or names the step that is not registered.
//   - Attempt counts the holds in a row.
//   - Since.
//   - RetryAt is when the run is replayed again.
type HoldInfo = sdk.HoldInfo

// HookInfo is an active hook.
//
// Its fields:
//   - ID.
//   - RunID.
//   - Token.
//   - Metadata.
//   - IsWebhook.
//   - CreatedAt.
type HookInfo = sdk.HookInfo

// ListRunsOptions filters and pages ListRuns.
//
// Its fields:
//   - WorkflowName.
//   - Status.
//   - Attribute, when set, lists only the runs with that attribute.
//   - Limit.
//   - Cursor.
type ListRunsOptions = sdk.ListRunsOptions

// PatchReport tells whether a patch can be retired. Open lists the runs of
// the workflow not ended whose logs do not carry the patch's marker: runs
// that went past the patch with the old code (they need the old path until
// they end), and runs that have not reached it yet (they will take the new
// path, but the report cannot tell them apart without the code). Marked
// lists the runs not ended that took the new path. Runs counts the
// workflow's runs in the World, ended or not: none at all usually means a
// misspelled name (workflow names are case-sensitive).
//
// Its methods (internal/sdk documents each in full):
//
//   - Retirable reports whether no run not ended may need the patch's old path.
//
// Its fields:
//   - Open.
//   - Marked.
//   - Runs.
type PatchReport = sdk.PatchReport

// RequestError is what a Client (and the replay checks) return for a
// request they refuse; nothing is created or changed then. Kind tells the
// case, and errors.Is matches it (Unwrap returns Kind and Err):
//
//   - world.ErrNotFound: no active hook holds Token (ResumeHook,
//     GetHookByToken): unknown, disposed, or its run has finished.
//   - world.ErrConflict: the start's idempotency key Key already started
//     run RunID of workflow Workflow, which this start (of Requested) does
//     not repeat: another workflow, or the same one with another input
//     (InputDiffers).
//   - world.ErrInvalid: the input of workflow Workflow does not decode into
//     its input type (Err says why); no run was created.
//   - ErrUnknownWorkflow: the Registry does not hold workflow Workflow (no
//     run was created). The replay checks set RunID (the run whose log
//     names it) and Registered (the names the Registry holds).
//
// Its methods (internal/sdk documents each in full):
//
//   - Error returns the error's text.
//   - Unwrap returns Kind and the cause, so that errors.Is matches the kind and errors.As finds the cause's types.
//
// Its fields:
//   - Kind is world.ErrNotFound, world.ErrConflict, world.ErrInvalid or ErrUnknownWorkflow.
//   - Token is the hook token (world.ErrNotFound).
//   - Key is the idempotency key (world.ErrConflict).
//   - RunID: Key is the idempotency key (world.ErrConflict).
//   - Workflow: Key is the idempotency key (world.ErrConflict).
//   - Requested is the workflow a conflicting start asked for.
//   - InputDiffers is set on a conflict when the workflows agree and the inputs do not.
//   - Registered, set by the replay checks for an unknown workflow, holds the names the Registry holds.
//   - Err is the cause: the decoding error of an invalid input.
type RequestError = sdk.RequestError

// Run is a handle on a run whose output has type O.
//
// Its methods (internal/sdk documents each in full):
//
//   - Cancel cancels the run (see Client.Cancel).
//   - Existed reports whether Start found the run its idempotency key had already started instead of creating one (an unfinished run found this way was woken).
//   - ID returns the run's ID.
//   - Info returns the run as stored.
//   - Result waits for the run to end and returns its output.
type Run[O any] = sdk.Run[O]

// RunInfo is a run as stored.
//
// Its fields:
//   - ID.
//   - WorkflowName.
//   - Status.
//   - Input and Output are the run's payloads as the Client's World returned them: for an encrypted run read through a World without its key (see encrypt.Wrap), their sealed envelopes, not JSON of the workflow's types (Result refuses to decode those).
//   - Output.
//   - Err is the run's error (typed again) when it failed.
//   - Hold says why a held run (world.RunStatusHeld) is held, nil otherwise.
//   - ErrorCode is the error code of a failed run (USER_ERROR, RUNTIME_ERROR, REPLAY_DIVERGENCE after FailRun on a held run, ...): empty for any other run, a held one included, which has not failed.
//   - CancelReason.
//   - IdempotencyKey.
//   - Version is the version of the code that started the run (the starting Client's client.Config.Version), "" when none was recorded.
//   - Attributes.
//   - ParentRunID.
//   - RootRunID.
//   - CreatedAt.
//   - StartedAt.
//   - CompletedAt.
//   - DeactivatedAt is when the finished run came to rest (see WaitDeactivated), zero until then.
//   - Cleanup is the state of a completed run's cleanup hook (world.CleanupPending, world.CleanupDone, world.CleanupFailed), empty without one.
//   - Compensations says how the run's compensations went (see WithCompensation).
type RunInfo = sdk.RunInfo

// RunPage is a page of runs, newest first.
//
// Its fields:
//   - Runs.
//   - Cursor.
//   - HasMore.
type RunPage = sdk.RunPage

// StartOption tunes Start.
type StartOption = sdk.StartOption

// StreamChunk is one chunk of a stream.
//
// Its methods (internal/sdk documents each in full):
//
//   - Decode decodes a JSON chunk into v.
//
// Its fields:
//   - Index.
//   - Data.
//   - JSON reports a chunk written with WriteJSON.
type StreamChunk = sdk.StreamChunk

// StreamInfo describes a stream: the index of its last chunk (-1 when empty
// or unknown) and whether it is closed.
//
// Its fields:
//   - TailIndex.
//   - Done.
type StreamInfo = sdk.StreamInfo

// StreamOptions selects what ReadStream and ReadStreamPage read.
//
// Its fields:
//   - Namespace names the stream ("" is the default stream).
//   - Start is the first chunk's index; negative counts back from the end (-1 is the last chunk).
//   - Limit, when positive, bounds the chunks read: ReadStream ends after Limit chunks, ReadStreamPage returns at most Limit (0: the World's page size).
type StreamOptions = sdk.StreamOptions

// StreamPage is one page of a stream: its chunks, the index to read from
// next, and whether the stream is closed and this page reaches its end.
//
// Its fields:
//   - Chunks.
//   - Next.
//   - Done.
type StreamPage = sdk.StreamPage

// SubscribeOptions selects what a subscription delivers.
//
// Its fields:
//   - RunID is the run to follow.
//   - Types keeps only events of these types (empty: every event).
//   - Snapshot starts the subscription with the current state: for one run, one Update with the run, its steps, active hooks and waits as they stand, then the events committed after it.
//   - After resumes from the Cursor of an earlier Update: the events committed after it, none twice and none missed.
type SubscribeOptions = sdk.SubscribeOptions

// Subscription is a live feed of updates (Client.Subscribe). Next and All
// are for one goroutine; Close may be called from any.
//
// Its methods (internal/sdk documents each in full):
//
//   - All yields the updates until the subscription ends.
//   - Close ends the subscription; a Next waiting returns.
//   - Next returns the next update, waiting for it.
type Subscription = sdk.Subscription

// Update is one message of a subscription: a snapshot or an event, with
// the cursor to resume after it.
//
// Its fields:
//   - Cursor resumes the subscription right after this update (SubscribeOptions.After).
//   - Event is the committed event.
//   - Snapshot is a run's state as of its sequence number Snapshot.Run.LastSeq (events up to it are in it).
type Update = sdk.Update

// CancelCompensating makes a cancellation compensate the run's completed
// steps that declared a compensation (workflow.WithCompensation), after the run's
// end, the most recently completed first: the run ends cancelled at once,
// and is deactivated once the compensations have ended
// (RunInfo.Compensations says how they went).
func CancelCompensating() CancelOption {
	return sdk.CancelCompensating()
}

// FromContext returns the client available in a step's context: the worker's
// client, or one over the step's World. Nil outside a step.
func FromContext(ctx context.Context) *Client {
	return sdk.ClientFrom(ctx)
}

// FailCompensating makes FailRun compensate the run's completed steps that
// declared a compensation, whatever its workflow's definition says.
func FailCompensating() FailOption {
	return sdk.FailCompensating()
}

// FailWithoutCompensating makes FailRun leave the run's completed steps as
// they are, even when its workflow is defined WithCompensateOnFailure.
func FailWithoutCompensating() FailOption {
	return sdk.FailWithoutCompensating()
}

// New returns a client for cfg.World. The options are Skein's own (its
// wiring and tests); callers pass none.
func New(cfg Config, opts ...knobs.Option) (*Client, error) {
	return sdk.NewClient(cfg, opts...)
}

// ReportExisting makes Start set *existed: true when its idempotency key
// named a run started before, whose ID Start returns instead of starting
// one, false when Start created the run.
func ReportExisting(existed *bool) StartOption {
	return sdk.ReportExisting(existed)
}

// StartUnregistered lets Client.Start by name start a workflow that the
// client's Registry does not hold, for a workflow that workers of another
// service run. Without it, a client given a Registry refuses such a name
// with a *RequestError matching ErrUnknownWorkflow, and a client without one starts any name.
func StartUnregistered() StartOption {
	return sdk.StartUnregistered()
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
func StrictInput() StartOption {
	return sdk.StrictInput()
}

// WithAttributes records string attributes with the run (within the
// bounds workflow.SetAttributes gives, keys starting with ReservedPrefix excluded;
// Start refuses others with an error matching world.ErrInvalid and creates
// no run).
func WithAttributes(attrs map[string]string) StartOption {
	return sdk.WithAttributes(attrs)
}

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
	return sdk.WithIdempotencyKey(key)
}

// WithVersion records version as the new run's code version in place of
// the client's (Config.Version): for a tool that starts runs on
// behalf of other code, such as one rerunning a run of an older version.
// "" records none.
func WithVersion(version string) StartOption {
	return sdk.WithVersion(version)
}
