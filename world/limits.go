package world

import (
	"errors"
	"fmt"
)

// Limits bound how far one run may grow, so that no caller (workflow code,
// a step, a client, the holder of a hook token) can grow a run until the
// process holding it dies. A World is configured with them (each World's
// Config has a Limits field) and passes them to Apply in State.Limits;
// the engine reads them from its World (its Limits method) to check, before it
// commits, what only it can count (hooks and waits) and to fail a run that
// reaches one with a typed error. A zero field takes its default.
//
// The defaults beat AWS Lambda durable functions' (256 KB per checkpoint,
// 25,000 operations per execution): a payload of 1 MiB (dynamoworld keeps
// any payload over 64 KiB in S3), 100,000 events (a serial step is three
// events: about 33,000 steps).
type Limits struct {
	// MaxEvents bounds a run's log (default 100,000 events). A run that
	// has as many is refused every further event except the ones that
	// end or hold it (run_completed, run_failed, run_cancelled, run_held)
	// and, once it has ended, what its rest records (the outcomes of steps
	// still running, compensations, cleanup, run_deactivated), all bounded
	// by what the run already holds. The engine fails a run that reaches it
	// with CodeMaxEventsExceeded.
	MaxEvents int64
	// MaxPayload bounds one payload in bytes, as stored (its compact
	// JSON; an encrypting World's sealed bytes; see Run.PayloadBytes): a
	// run's input or output, a step's input or result, a hook's metadata
	// or payload, an error as recorded (default 1 MiB).
	MaxPayload int
	// MaxHooks and MaxWaits bound the hooks (webhooks included) and the
	// sleeps and timers one run creates over its life (default 10,000
	// each). The engine checks them before it commits a creation.
	MaxHooks, MaxWaits int
	// MaxStreamBytes bounds the bytes written to one stream of a run,
	// without the writers' framing (WriteStreamParams.DataBytes; default
	// 64 MiB): a write that would pass it is refused.
	MaxStreamBytes int64
	// MaxStreams bounds the streams one run has (default 10,000, as
	// MaxHooks and MaxWaits), so that a run stores at most MaxStreams x
	// MaxStreamBytes of stream output (lower either for less). It is judged
	// when a write (or a close) would create a stream: a stream past it
	// is refused with a *LimitError of "streams" and nothing of it is
	// written; writes to the run's existing streams go on. Every World
	// counts the streams themselves, so writers in any number of
	// processes share the bound. Each request to a webhook answered by
	// hand (the SDK's Request.Respond) opens a reply stream in its run,
	// and a fan-out may give each step a stream of its own: a run that
	// needs more than 10,000 needs it raised.
	MaxStreams int
	// MaxRunBytes bounds the payload bytes one run's log holds in all
	// (Run.PayloadBytes: inputs, results, outputs, hook payloads and
	// metadata, errors, each as stored; default 128 MiB). An event that
	// would take the run past it is refused, except the ones that end or
	// hold it and, once it has ended, what its rest records (as for
	// MaxEvents), of which a step's outcome only within LateOutcomeSlack: a
	// run at rest holds at most MaxRunBytes, its end's error (at most
	// MaxPayload), LateOutcomeSlack per step left running at its end, and
	// its compensations' and cleanup's errors. Without it a run's only
	// bound is MaxEvents times MaxPayload (about 100 GB), and whoever holds
	// a webhook's token could grow it until the worker replaying it runs out
	// of memory: a worker holds a run's whole log to replay it (about four
	// times its payload bytes in memory, measured on the local world), so
	// 128 MiB keeps a run within a 1 GiB function. AWS durable functions
	// publish no total per execution beyond 25,000 operations of at most
	// 256 KB each; 128 MiB is 512 of their largest checkpoints, with each
	// payload four times larger.
	MaxRunBytes int64
}

// The default limits (see Limits).
const (
	defaultMaxEvents      = 100_000
	defaultMaxPayload     = 1 << 20
	defaultMaxHooks       = 10_000
	defaultMaxWaits       = 10_000
	defaultMaxStreamBytes = 64 << 20
	defaultMaxStreams     = 10_000
	defaultMaxRunBytes    = 128 << 20
)

// WithDefaults returns l with every zero (or negative) field set to its
// default.
func (l Limits) WithDefaults() Limits {
	if l.MaxEvents <= 0 {
		l.MaxEvents = defaultMaxEvents
	}
	if l.MaxPayload <= 0 {
		l.MaxPayload = defaultMaxPayload
	}
	if l.MaxHooks <= 0 {
		l.MaxHooks = defaultMaxHooks
	}
	if l.MaxWaits <= 0 {
		l.MaxWaits = defaultMaxWaits
	}
	if l.MaxStreamBytes <= 0 {
		l.MaxStreamBytes = defaultMaxStreamBytes
	}
	if l.MaxStreams <= 0 {
		l.MaxStreams = defaultMaxStreams
	}
	if l.MaxRunBytes <= 0 {
		l.MaxRunBytes = defaultMaxRunBytes
	}
	return l
}

// CodeLimitExceeded fails a run, a step or a call that would pass one of
// its run's Limits other than MaxEvents (CodeMaxEventsExceeded).
const CodeLimitExceeded = "LIMIT_EXCEEDED"

// ErrLimitExceeded (413): the write would grow a run past one of its
// Limits. The error is a *LimitError.
var ErrLimitExceeded = errors.New("world: limit exceeded")

// LimitError is the refusal of a write that would pass one of a run's
// Limits: Limit names it ("events", "payload", "hooks", "waits",
// "stream bytes", "streams", "run bytes"), Max is its value and Size what the write would make it.
type LimitError struct {
	RunID string
	Limit string
	Max   int64
	Size  int64
	// What names the refused write (an event type, a stream, a request
	// body); empty when the limit says it all.
	What string
}

func (e *LimitError) Error() string {
	what := ""
	if e.What != "" {
		what = " (" + e.What + ")"
	}
	run := ""
	if e.RunID != "" {
		run = "run " + e.RunID + ": "
	}
	if e.Limit == limitEvents {
		return fmt.Sprintf("%s: %sthe run has reached its limit of %d events%s", ErrLimitExceeded, run, e.Max, what)
	}
	if e.Limit == limitStreams {
		return fmt.Sprintf("%s: %sthe run has reached its limit of %d streams%s", ErrLimitExceeded, run, e.Max, what)
	}
	return fmt.Sprintf("%s: %s%s of %d exceeds the limit of %d%s", ErrLimitExceeded, run, e.Limit, e.Size, e.Max, what)
}

// Unwrap lets errors.Is match ErrLimitExceeded.
func (e *LimitError) Unwrap() error { return ErrLimitExceeded }

// Code is the error code a run or call failed by e carries:
// CodeMaxEventsExceeded for the events limit, CodeLimitExceeded otherwise.
func (e *LimitError) Code() string {
	if e.Limit == limitEvents {
		return CodeMaxEventsExceeded
	}
	return CodeLimitExceeded
}

// The names of the limits Apply checks, as LimitError.Limit has them.
const (
	limitEvents   = "events"
	limitPayload  = "payload"
	limitRunBytes = "run bytes"
	limitStreams  = "streams" // judged by each World's Streamer (Limits.MaxStreams)
)

// checkLimits refuses ev, whose payloads measure sz, when it would grow
// s.Run past s.Limits (fields of zero are not checked, as when a log is
// folded).
func checkLimits(s State, ev Event, sz payloadSizes) error {
	l := s.Limits
	if l.MaxPayload > 0 {
		if n := sz.largest; n > int64(l.MaxPayload) {
			return &LimitError{RunID: ev.RunID, Limit: limitPayload, Max: int64(l.MaxPayload), Size: n, What: string(ev.Type())}
		}
	}
	if s.Run == nil {
		return nil
	}
	if l.MaxRunBytes > 0 && (!endsOrRests(s.Run, ev.Data) || lateOutcomeOver(s.Run, ev.Data, sz)) {
		if n := sz.total; n > 0 && s.Run.PayloadBytes+n > l.MaxRunBytes {
			return &LimitError{RunID: ev.RunID, Limit: limitRunBytes, Max: l.MaxRunBytes, Size: s.Run.PayloadBytes + n, What: string(ev.Type())}
		}
	}
	if l.MaxEvents <= 0 || s.Run.LastSeq < l.MaxEvents {
		return nil
	}
	if _, ok := ev.Data.(*RunCompleted); ok || endsOrRests(s.Run, ev.Data) {
		return nil
	}
	return &LimitError{RunID: ev.RunID, Limit: limitEvents, Max: l.MaxEvents, Size: s.Run.LastSeq + 1, What: string(ev.Type())}
}

// LateOutcomeSlack is the most payload bytes a step's outcome recorded
// after its run's end may carry past the run's Limits.MaxRunBytes: a step
// result or error larger than this that would take an ended run past the
// bound is refused (the engine records the step's failure by the limit
// instead, a few hundred bytes). The rest of a run at its bound so grows
// it by at most this much per step still running at its end.
const LateOutcomeSlack = 1 << 10

// lateOutcomeOver reports whether d is the outcome of a step recorded
// after run's end whose payload is larger than LateOutcomeSlack: exempt
// from nothing, it counts against MaxRunBytes as before the end. Without
// it the results of steps left running by a run's end (a workflow that
// returns before its background steps) would grow the run without bound.
func lateOutcomeOver(run *Run, d EventData, sz payloadSizes) bool {
	switch d.(type) {
	case *StepCompleted, *StepFailed, *StepRetrying:
		return run.Status.Terminal() && sz.total > LateOutcomeSlack
	}
	return false
}

// endsOrRests reports whether d is exempt from a full run's limits: an
// event that fails, cancels or holds run, or, once run has ended, any but
// attribute_set (its rest: bounded by what the run already holds).
// run_completed is not: its output is counted in the run's bytes.
func endsOrRests(run *Run, d EventData) bool {
	switch d.(type) {
	case *RunFailed, *RunCancelled, *RunHeld:
		return true
	case *AttributeSet:
		return false
	}
	return run.Status.Terminal()
}
