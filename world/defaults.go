package world

import "time"

// The leases and the visibility every layer defaults to: the Worlds (when a
// request names none), the engine (engine.Config, worker.EngineOptions,
// handler.Config.Engine) and the local Worker take these, so that each has
// one default, written here.
const (
	// DefaultStepLease is a step attempt's execution lease (a compensation
	// attempt's too): what a step_started or compensation_started grants
	// when the event names none, and the engine's StepLeaseTTL. The engine
	// renews it every third of it while the attempt runs; a step whose
	// executor died runs again once it has expired. One minute: a Lambda
	// function killed mid-step (its timeout, an out-of-memory kill) holds
	// its steps up for at most that long, and two renewals in a row may
	// fail before another executor could start the step.
	DefaultStepLease = time.Minute
	// DefaultRunLease is the run lease a continuation holds while it runs
	// a run's workflow: what AcquireRunLease and RenewRunLease grant when
	// RunLeaseParams names no TTL, and the engine's RunLeaseTTL.
	DefaultRunLease = 30 * time.Second
	// DefaultVisibility hides a received message from other receivers:
	// what Receive applies when ReceiveParams names no Visibility, and the
	// local Worker's (worker.Config.Visibility).
	DefaultVisibility = 30 * time.Second
)
