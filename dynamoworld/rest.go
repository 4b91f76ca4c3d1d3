package dynamoworld

import "github.com/skeinflow/skein/world"

// A finished run's rest (world.Run.DeactivatedAt and Run.Cleanup) is kept on
// every commit item, like the run status (rs): both change with an event
// and never with the head alone, and a run is decoded from its newest
// commit, which a strongly consistent Query always returns as of the fence
// (a head read beside it may be older). So the at-most-once refusals of
// run_deactivated and run_cleaned_up are judged on what the fence checked.
const (
	aDeactivated = "rda" // on a commit: when the run was deactivated, absent before
	aCleanup     = "rcu" // on a commit: the run's cleanup state, absent when none
	aRunBytes    = "rpb" // on a commit: world.Run.PayloadBytes (Limits.MaxRunBytes)
)

// restAttrs are the attributes of a commit item that encodeRest writes:
// a read of the newest commit that projects attributes names them all.
func restAttrs() []string {
	return []string{aDeactivated, aCleanup, aRunBytes, aRunCompensate, aCompOwed, aCompRunning, aCompSucceeded, aCompFailed}
}

// encodeRest stores r's rest on a commit item, with its compensation
// flag and counts (compensation.go).
func encodeRest(it item, r *world.Run) {
	setT(it, aDeactivated, r.DeactivatedAt)
	setS(it, aCleanup, r.Cleanup)
	setN(it, aRunBytes, r.PayloadBytes)
	encodeRunComp(it, r)
}

// decodeRest reads the rest encodeRest stored on the newest commit.
func decodeRest(last item, r *world.Run) {
	r.DeactivatedAt = getT(last, aDeactivated)
	r.Cleanup = getS(last, aCleanup)
	r.PayloadBytes = getN(last, aRunBytes)
	decodeRunComp(last, r)
}
