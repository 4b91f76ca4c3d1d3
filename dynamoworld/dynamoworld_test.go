package dynamoworld_test

import (
	"testing"

	"github.com/skeinflow/skein/dynamoworld/dynamotest"
	"github.com/skeinflow/skein/world/worldtest"
)

// TestConformance runs the World conformance suite against DynamoDB, SQS
// and S3 (the emulators in CI): every case gets its own table, queue and
// bucket.
func TestConformance(t *testing.T) {
	dynamotest.Require(t)
	worldtest.Run(t, worldtest.Options{
		New: func(t *testing.T) worldtest.Subject {
			w := dynamotest.NewWorld(t, dynamotest.Options{})
			return worldtest.Subject{World: w, Consumer: w}
		},
		Racers: 16,
		Slow:   1,
	})
}
