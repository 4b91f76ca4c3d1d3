package workflow

import (
	"context"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
)

// DefaultMaxRetries is a step's retry budget unless StepOptions says
// otherwise: 4 attempts in all.
const DefaultMaxRetries = sdk.DefaultMaxRetries

// NoRetries, as StepOptions.MaxRetries, runs a step once.
const NoRetries = sdk.NoRetries

// RegistrationInvalidName: the name is empty, too long, or not text
// the log can record. Matches world.ErrInvalid.
const RegistrationInvalidName = sdk.RegistrationInvalidName

// RegistrationReserved: the name starts with ReservedPrefix. Matches
// world.ErrInvalid.
const RegistrationReserved = sdk.RegistrationReserved

// RegistrationTaken: another definition of the same kind is
// registered under the name. Matches world.ErrConflict.
const RegistrationTaken = sdk.RegistrationTaken

// RegistrationUnregisteredCompensation: the step's compensation
// (WithCompensation) is nil (Compensation is empty) or is not
// registered in the same call or an earlier one. Matches
// world.ErrInvalid.
const RegistrationUnregisteredCompensation = sdk.RegistrationUnregisteredCompensation

// WebhookPath is where worker.WebhookHandler expects to be mounted: a
// webhook's URL is WebhookPath followed by its token.
const WebhookPath = sdk.WebhookPath

// ErrHookDisposed is returned when waiting on a hook the workflow disposed.
var ErrHookDisposed = sdk.ErrHookDisposed

// ErrRunCancelled is returned for a run that was cancelled.
var ErrRunCancelled = sdk.ErrRunCancelled

// Awaitable is anything Select can wait on: every Future.
type Awaitable = sdk.Awaitable

// Cleanup is what a workflow's cleanup hook (WithCleanup) receives about a
// run that has completed.
//
// Its methods (internal/sdk documents each in full):
//
//   - DecodePrevious decodes Previous into v.
//
// Its fields:
//   - RunID.
//   - WorkflowName.
//   - Input is the run's input, Result its final result (as recorded).
//   - Result.
//   - Previous is the state before the run's last step, as recorded: the result of the last step that completed before the run did, or the run's input when no step did.
//   - Attributes.
//   - ParentRunID.
//   - RootRunID.
//   - CreatedAt.
//   - CompletedAt.
type Cleanup[I any, O any] = sdk.Cleanup[I, O]

// CleanupOptions tunes a cleanup hook.
//
// Its fields:
//   - Timeout bounds one call of the hook (default one minute): its context is cancelled then, and the call is recorded as failed with a CleanupTimeoutError once it returns or a short grace has passed.
type CleanupOptions = sdk.CleanupOptions

// Compensation is the input of a compensation step: the input the step it
// undoes was called with and the result that step returned.
//
// Its fields:
//   - Input.
//   - Result.
type Compensation[I any, O any] = sdk.Compensation[I, O]

// CompensationError is what Compensate returns for a compensation that
// failed for good (after its retries): the step it was to undo and the
// compensation's error (a *StepError naming the compensation step).
//
// Its methods (internal/sdk documents each in full):
//
//   - Error returns the error's text.
//   - Unwrap returns the compensation's error.
//
// Its fields:
//   - Step: the step compensated.
//   - StepID.
//   - Err.
type CompensationError = sdk.CompensationError

// Context is what a workflow function sees: deterministic time, randomness
// and IDs, and the means to call steps, sleep and wait for hooks. Workflow
// code is replayed, so it must be deterministic: no I/O, no time.Now, no
// goroutines calling workflow functions, no ranging over maps to decide
// what to call. Side effects belong in steps.
//
// Its methods (internal/sdk documents each in full):
//
//   - Logger returns a logger for the workflow code, with the run ID and workflow name attached.
//   - NewID returns a deterministic unique ID (a ULID), derived from the run ID: an identifier, not a secret.
//   - Now returns the workflow's time: the run's start, advanced as the events the workflow has seen were recorded.
//   - Rand returns a random source seeded by the run ID.
//   - Workflow returns the run's metadata.
type Context = sdk.Context

// Definition is a workflow or a step to register: *Workflow and *Step.
//
// Its methods (internal/sdk documents each in full):
//
//   - Name returns the name the definition is registered and recorded under.
type Definition = sdk.Definition

// Error is an error read back from the log whose Go type is not known here:
// it keeps the recorded type name, message, stack (for panics) and cause.
//
// Its methods (internal/sdk documents each in full):
//
//   - Error returns the error's text.
//   - Is keeps context errors recognisable after a round trip.
//   - Unwrap returns the cause.
//
// Its fields:
//   - Type.
//   - Message.
//   - Stack.
//   - Code.
//   - Details.
//   - Cause.
type Error = sdk.Error

// Future is the eventual result of a step, a timer, a hook payload or a
// child workflow. Futures are values; copy them freely.
//
// Its methods (internal/sdk documents each in full):
//
//   - Done reports whether the future has settled.
//   - Get waits for the future and returns its value.
type Future[T any] = sdk.Future[T]

// Hook receives payloads of type T sent to its token (client.Client.ResumeHook),
// in the order they were recorded. It is registered when the workflow next
// waits, and released when it is disposed or the run ends.
//
// A sender cannot know T, so any JSON is accepted and recorded; a payload
// that does not decode as T reaches the workflow as a *SerializationError
// (Token and HookID set) from
// Receive (or the future's Get), which the workflow may handle (log it and
// receive again: the bad payload is consumed). Returned unhandled, it fails
// the run with HOOK_PAYLOAD_INVALID.
//
// Its methods (internal/sdk documents each in full):
//
//   - Conflict registers the hook without consuming a payload and reports the run that holds its token.
//   - Dispose releases the hook's token when the workflow next waits; later payloads are refused.
//   - Next returns a future of the hook's next payload.
//   - Receive waits for the hook's next payload.
//   - Token returns the hook's token.
type Hook[T any] = sdk.Hook[T]

// HookConflictError is returned by a hook whose token another run's active
// hook holds.
//
// Its methods (internal/sdk documents each in full):
//
//   - Error returns the error's text.
//
// Its fields:
//   - Token.
//   - ConflictingRunID.
type HookConflictError = sdk.HookConflictError

// HookOptions configures a hook.
//
// Its fields:
//   - Token is what a sender resumes the hook with.
//   - Metadata is stored with the hook (JSON).
type HookOptions = sdk.HookOptions

// RegistrationError is what Register (and Replace) return for a definition
// they refuse, and worker.New for a schedule it refuses; nothing of the call
// is registered then. errors.Is matches it with world.ErrConflict for a
// name another definition holds, world.ErrInvalid for any other refusal.
//
// Its methods (internal/sdk documents each in full):
//
//   - Error returns the error's text.
//   - Is matches world.ErrConflict for a taken name, world.ErrInvalid for any other refusal.
//   - Unwrap returns the detail of an invalid name or schedule.
//
// Its fields:
//   - Kind is "workflow", "step" or "schedule".
//   - Name: Kind is "workflow", "step" or "schedule".
//   - Problem, for a workflow or a step, is RegistrationTaken, RegistrationReserved, RegistrationInvalidName or RegistrationUnregisteredCompensation.
//   - Compensation names the step's compensation that is not registered (RegistrationUnregisteredCompensation; empty for a nil one).
//   - Err details an invalid name or schedule (nil otherwise).
type RegistrationError = sdk.RegistrationError

// Registry holds the workflows, steps and error types a worker can run,
// registered explicitly by name. It is safe for concurrent use.
//
// Its methods (internal/sdk documents each in full):
//
//   - MustRegister is Register that panics on error, for package-level setup.
//   - Register adds workflows and steps.
//   - RegisterError makes an error type survive a round trip through the log.
//   - RegisterSentinel makes a sentinel error value (var ErrOutOfStock = errors.New("out of stock")) survive a round trip through the log.
type Registry = sdk.Registry

// Request is an HTTP request a webhook received.
//
// Its methods (internal/sdk documents each in full):
//
//   - Respond sends the response of a manual webhook's request.
//
// Its fields:
//   - Method.
//   - URL is the request's URL with its last path segment, the webhook's token, shown as a digest ("sha256:" and 12 hex digits of its SHA-256): the token is the capability to resume the webhook, and the request is recorded in the run's log, which is read more widely than the webhook's URL may be (Webhook.URL and Webhook.Token give the workflow its own URL).
//   - Header.
//   - Body.
//   - ReplyRun and ReplyTo name the stream the handler waits on for a manual response.
//   - ReplyTo.
type Request = sdk.Request

// Response is an HTTP response a webhook answers with.
//
// Its fields:
//   - Status.
//   - Header.
//   - Body.
type Response = sdk.Response

// RunFailedError is returned for a run that failed: Code is the run's error
// code (USER_ERROR, RUNTIME_ERROR, REPLAY_DIVERGENCE, ...), Cause its error.
//
// Its methods (internal/sdk documents each in full):
//
//   - Error returns the error's text.
//   - Is reports whether target is world.ErrLimitExceeded and the run failed for passing one of its limits (codes MAX_EVENTS_EXCEEDED and LIMIT_EXCEEDED).
//   - Unwrap returns the cause.
//
// Its fields:
//   - RunID.
//   - Code.
//   - Cause.
type RunFailedError = sdk.RunFailedError

// SerializationError reports a value that could not be encoded or decoded as
// JSON. It is never retried: a step whose arguments or result do not
// serialize fails at once.
//
// A hook's payload that does not decode as the hook's type is one too, with
// Token and HookID set: it is what the hook's Receive (or its future's Get)
// returns. The sender (ResumeHook, the CLI's hooks resume) cannot know that
// type, so the check is the workflow's. The payload is consumed, so the next
// Receive gets the next one: a workflow may log it and wait again. A run
// whose workflow returns it, or an error wrapping it, fails with
// HOOK_PAYLOAD_INVALID.
//
// Its methods (internal/sdk documents each in full):
//
//   - Error returns the error's text.
//   - Unwrap returns the underlying error.
//
// Its fields:
//   - What names the value: `arguments of step "charge"`, "workflow input", "hook metadata", ....
//   - Decode is set when the value could not be decoded (JSON to Go), unset when it could not be encoded.
//   - Token and HookID, set for a hook's payload, are the hook's token and ID.
//   - HookID: Token and HookID, set for a hook's payload, are the hook's token and ID.
//   - Err.
type SerializationError = sdk.SerializationError

// Step is a step: an ordinary function that runs once per attempt, whose
// result is recorded. Steps are where side effects belong.
//
// Its methods (internal/sdk documents each in full):
//
//   - Call runs the step and waits for its result.
//   - Go starts the step and returns its future.
//   - Name returns the step's name.
type Step[I any, O any] = sdk.Step[I, O]

// StepError is what a workflow gets from a step that failed for good: the
// step, its last attempt, and the error it returned (typed again after its
// round trip through the log).
//
// Its methods (internal/sdk documents each in full):
//
//   - Error returns the error's text.
//   - Unwrap returns the step's error.
//
// Its fields:
//   - Step.
//   - StepID.
//   - Attempt.
//   - Err.
type StepError = sdk.StepError

// StepMetadata describes the step attempt running. In a compensation
// (WithCompensation), StepName names the compensation step, StepID the
// step it undoes, and Compensating is set.
//
// Its fields:
//   - StepName.
//   - StepID.
//   - Compensating.
//   - Attempt is 1-based: 1 for the first attempt, 2 for the first retry.
//   - StartedAt is when the step's first attempt started.
type StepMetadata = sdk.StepMetadata

// StepOptions tunes a step's retries.
//
// Its fields:
//   - MaxRetries is the number of retries after the first attempt (default DefaultMaxRetries; NoRetries for none).
//   - Backoff returns the delay before retry n (1-based).
//   - Timeout, when positive, bounds each attempt: when it passes, the step's context is cancelled and the attempt fails with a timeout error (code STEP_TIMEOUT; errors.Is context.DeadlineExceeded), retried like any failure, whatever the function returns afterwards: a result returned after the deadline is discarded (an error becomes the timeout's cause), and a function that does not return within a second of it is left running on its own, so steps should watch their context.
type StepOptions = sdk.StepOptions

// StreamWriter writes to one of a run's streams from inside a step. Each
// Write or WriteJSON is one chunk.
//
// Its methods (internal/sdk documents each in full):
//
//   - Close marks the stream done; readers end after its last chunk.
//   - Write writes p as one chunk of bytes.
//   - WriteJSON writes v as one JSON chunk.
type StreamWriter = sdk.StreamWriter

// Webhook is a hook resumed by HTTP requests to its URL. Like any hook it
// is not single-use: every request delivered while it is active is
// recorded, in order, and Receive or Next returns them one per call. It
// takes requests until the workflow disposes of it or the run ends; to
// accept one request only, Dispose it after the first Receive (later
// requests get 404).
//
// The URL needs no other credential: whoever holds the token can deliver
// requests, so hand it only to the intended sender. The generated token has
// 132 random bits, which nobody can derive from the run ID; the handler
// keeps it out of its logs.
//
// Its methods (internal/sdk documents each in full):
//
//   - Dispose stops the webhook: later requests get 404.
//   - Next returns a future of the next request.
//   - Receive waits for the next request.
//   - Token returns the webhook's token.
//   - URL returns the webhook's path under WebhookPath.
type Webhook = sdk.Webhook

// WebhookOptions says how a webhook answers the requests it receives: by
// default 202 Accepted with an empty body; with Response, that response;
// with Manual, the response a step sends with Request.Respond.
//
// Its fields:
//   - Response.
//   - Manual.
type WebhookOptions = sdk.WebhookOptions

// Workflow is a workflow: deterministic Go that calls steps, sleeps and
// waits, and survives crashes and redeploys by replaying its log.
//
// Its methods (internal/sdk documents each in full):
//
//   - Call runs the workflow as a child of the calling workflow and waits for its result.
//   - Get returns the run runID of this workflow.
//   - Go starts the workflow as a child of the calling workflow and returns a future of its result.
//   - Name returns the workflow's name.
//   - Start starts a run of the workflow with input.
//   - WithCleanup gives the workflow a cleanup hook and returns the workflow.
//   - WithCompensateOnFailure makes a run of w that fails compensate its completed steps.
type Workflow[I any, O any] = sdk.Workflow[I, O]

// WorkflowMetadata describes a run: in a workflow from Context.Workflow, in
// a step from WorkflowMetadataFrom. Both give the same values.
//
// Its fields:
//   - WorkflowName.
//   - RunID.
//   - StartedAt is when the run was created.
type WorkflowMetadata = sdk.WorkflowMetadata

// All waits for every future and returns their values in order. It returns
// as soon as one fails (the first failure in log order), leaving the others
// running.
func All[T any](ctx Context, fs ...Future[T]) ([]T, error) {
	return sdk.All[T](ctx, fs...)
}

// Any waits for the first future to succeed (first in log order) and
// returns its value. When all fail it returns their errors joined, as
// errors.Join does (errors.Is and errors.As look into each; the members
// are the futures' errors in the order of fs), with a message that says
// how many failed.
func Any[T any](ctx Context, fs ...Future[T]) (T, error) {
	return sdk.Any[T](ctx, fs...)
}

// Compensate runs the compensations of the steps this run has completed so
// far that declared one (WithCompensation), in reverse order of completion,
// one after the other; then the workflow continues (catch a failure,
// compensate, return a result). Each compensation is recorded on the step
// it undoes (comp_* events) and retried by its own step's policy; replay
// takes its outcome from the log, so Compensate is deterministic. Each
// completed step is compensated at most once: a later Compensate skips the
// steps compensated already. Steps that failed are not compensated, nor
// are steps still running (await them first if they must be): a later
// Compensate covers them once they complete. In a fan-out only the
// branches that completed are compensated.
//
// A compensation that fails for good does not stop the others; Compensate
// then returns the failures, each a *CompensationError, joined.
func Compensate(ctx Context) error {
	return sdk.Compensate(ctx)
}

// Deprecate marks a retired patch: the code keeps only the new path, and a
// run that reaches the call still records the patch's marker, so that a
// deployment still running the Patched version of the code, should it
// replay the run, takes the new path too.
func Deprecate(ctx Context, id string) {
	sdk.Deprecate(ctx, id)
}

// ExponentialBackoff returns a backoff starting at initial, doubling per
// retry up to limit, with ±20% jitter.
func ExponentialBackoff(initial time.Duration, limit time.Duration) func(retry int) time.Duration {
	return sdk.ExponentialBackoff(initial, limit)
}

// Fatal marks err as fatal: the step fails at once, without retries. It is
// for steps: a workflow's returned error fails its run whether or not it is
// fatal (workflows are not retried), so a workflow returns its error as is.
func Fatal(err error) error {
	return sdk.Fatal(err)
}

// New defines a workflow. Register it with a Registry before running it.
func New[I any, O any](name string, fn func(ctx Context, in I) (O, error)) *Workflow[I, O] {
	return sdk.New[I, O](name, fn)
}

// NewHook creates a hook in the workflow.
func NewHook[T any](ctx Context, opts HookOptions) *Hook[T] {
	return sdk.NewHook[T](ctx, opts)
}

// NewRegistry returns a registry holding the SDK's built-in steps.
func NewRegistry() *Registry {
	return sdk.NewRegistry()
}

// NewStep defines a step. Register it with a Registry before running it.
func NewStep[I any, O any](name string, fn func(ctx context.Context, in I) (O, error), opts ...StepOptions) *Step[I, O] {
	return sdk.NewStep[I, O](name, fn, opts...)
}

// NewTimer returns a future that settles after d, to race against steps or
// hooks with Select. d is measured from when the timer is recorded, at the
// workflow's next suspension.
func NewTimer(ctx Context, d time.Duration) Future[struct{}] {
	return sdk.NewTimer(ctx, d)
}

// NewTimerAt returns a future that settles at t.
func NewTimerAt(ctx Context, t time.Time) Future[struct{}] {
	return sdk.NewTimerAt(ctx, t)
}

// NewWebhook creates a webhook in the workflow. Its token is generated (see
// HookOptions.Token).
func NewWebhook(ctx Context, opts WebhookOptions) *Webhook {
	return sdk.NewWebhook(ctx, opts)
}

// Patched reports whether the run takes the new path of a change guarded
// by the patch id. A run that reaches the call for the first time takes
// the new path (true) and records the patch's marker in its log with the
// next step, hook or timer it creates. A run whose log already holds
// operations past this point without the marker ran this part with the
// code from before the patch, and takes the old path (false), so that its
// replay matches its log. A run replaying its own marker takes the new
// path again.
//
//	if workflow.Patched(ctx, "add-fraud-check") {
//		if _, err := fraudCheck.Call(ctx, order); err != nil {
//			return err
//		}
//	}
//
// A run decides a patch once: later calls with the same id from the same
// place (a loop) return the first answer. Give each change its own id: the
// same id asked for at two places in the code panics, naming both, which
// fails the run. Steps added, removed or
// reordered inside either branch replay without divergence. Once
// client.Client.CheckPatch reports that no run needs the old path, retire the
// patch: keep only the new path and call Deprecate in place of Patched
// (or remove the call, once no run of code that still calls Patched can
// be replayed). id must be non-empty.
func Patched(ctx Context, id string) bool {
	return sdk.Patched(ctx, id)
}

// Race waits for the first future to settle (first in log order) and
// returns its value or error. The others keep running.
func Race[T any](ctx Context, fs ...Future[T]) (T, error) {
	return sdk.Race[T](ctx, fs...)
}

// RetryAfter asks for the step to be retried after d (if retries remain).
func RetryAfter(err error, d time.Duration) error {
	return sdk.RetryAfter(err, d)
}

// RetryAt asks for the step to be retried at t (if retries remain).
func RetryAt(err error, t time.Time) error {
	return sdk.RetryAt(err, t)
}

// Select waits until one of fs settles and returns the index of the first
// to settle in log order. Its value is then read with Get, which does not
// wait. Select mixes futures of different types (a step against a timer).
func Select(ctx Context, fs ...Awaitable) int {
	return sdk.Select(ctx, fs...)
}

// SetAttributes merges attrs into the run's attributes. It is deterministic
// and returns at once: the attributes are recorded (an attribute_set event)
// at the workflow's next suspension, or with the run's end when the
// workflow returns first, and replay matches them by their keys (code that
// sets other keys at the same point of a run in flight diverges, like a
// step called by another name). A key or value out of bounds, or a run
// that would hold more than 16 keys, is refused here and nothing is
// recorded: the error matches world.ErrInvalid (a *world.RefusalError
// naming the key), and the run goes on as the code decides: returning the
// error fails the run. An empty value is out of bounds, so leave out the key
// of an optional value that may be empty rather than set it to "".
func SetAttributes(ctx Context, attrs map[string]string) error {
	return sdk.SetAttributes(ctx, attrs)
}

// Sleep suspends the workflow for d, durably: the run costs nothing while
// it sleeps and wakes within about a second of its time (within one queue
// hop on SQS).
func Sleep(ctx Context, d time.Duration) error {
	return sdk.Sleep(ctx, d)
}

// SleepUntil suspends the workflow until t.
func SleepUntil(ctx Context, t time.Time) error {
	return sdk.SleepUntil(ctx, t)
}

// StepMetadataFrom returns the metadata of the step ctx belongs to; false
// outside a step.
func StepMetadataFrom(ctx context.Context) (StepMetadata, bool) {
	return sdk.StepMetadataFrom(ctx)
}

// WithCompensation declares comp as the undo of s (a refund for a charge,
// say) and returns s. (It is a function rather than a method of Step
// because Go cannot express a method of Step[I, O] that takes a
// Step[Compensation[I, O], ...].) Call it where the step is defined, before the step is
// registered: Register refuses s unless comp is registered in the same call
// or an earlier one (a *RegistrationError, Problem
// RegistrationUnregisteredCompensation).
//
// Every call of s records the name of its compensation with the step
// (step_created), so the log says what undoes it. Once the step has
// completed, its compensation runs when the workflow calls Compensate, or
// after a failure of a workflow defined WithCompensateOnFailure, or after
// a cancellation that asks for it (client.CancelCompensating). It is no step of
// its own: its attempts are recorded on the step it undoes (comp_started,
// comp_retry_scheduled, comp_succeeded, comp_failed), with comp's retry
// policy and timeout, and the step moves to compensated or
// compensation_failed.
func WithCompensation[I any, O any](s *Step[I, O], comp *Step[Compensation[I, O], struct{}]) *Step[I, O] {
	return sdk.WithCompensation[I, O](s, comp)
}

// WorkflowMetadataFrom returns the metadata of the run whose step ctx
// belongs to; false outside a step.
func WorkflowMetadataFrom(ctx context.Context) (WorkflowMetadata, bool) {
	return sdk.WorkflowMetadataFrom(ctx)
}

// Writer returns a writer for the stream namespace ("" is the default
// stream) of the run whose step ctx belongs to. Outside a step, its writes
// fail.
func Writer(ctx context.Context, namespace string) *StreamWriter {
	return sdk.Writer(ctx, namespace)
}
