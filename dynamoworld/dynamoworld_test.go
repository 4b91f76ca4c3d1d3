package dynamoworld_test

import (
	"testing"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
	"github.com/skeinflow/skein/world/worldtest"
)

// suiteLimits are small enough for the conformance suite to reach.
var suiteLimits = world.Limits{MaxEvents: 1000, MaxPayload: 64 << 10, MaxStreamBytes: 256 << 10, MaxStreams: 16, MaxRunBytes: 4 << 20}

// TestConformance runs the World conformance suite against DynamoDB, SQS
// and S3 (the emulators in CI): every case gets its own table, queue and
// bucket. It runs twice: with the run cache (commits judged on the
// snapshot this World left at its previous commit, lazy steps) and
// without it (every commit judged on a fresh read, every step written at
// creation), so that both ways to a snapshot meet the same contract.
func TestConformance(t *testing.T) {
	dynamotest.Require(t)
	for _, tc := range []struct {
		name      string
		cacheRuns int
	}{
		{"cached", 0}, // the default
		{"uncached", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			worldtest.Run(t, worldtest.Options{
				New: func(t *testing.T) worldtest.Subject {
					clock := new(worldtest.Clock)
					w := dynamotest.NewWorld(t, dynamotest.Options{Config: dynamoworld.Config{Limits: suiteLimits},
						Knobs: []knobs.Option{knobs.WithCacheRuns(tc.cacheRuns), knobs.WithNow(clock.Now)}})
					return worldtest.Subject{World: w, Consumer: w, Clock: clock, AbandonClaim: dynamoworld.AbandonClaim(w)}
				},
				Racers: 16,
				Slow:   1,
			})
		})
	}
}
