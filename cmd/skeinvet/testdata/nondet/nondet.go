// Package nondet holds workflows with findings, for skeinvet's test.
package nondet

import (
	"time"

	"github.com/skeinflow/skein/cmd/skeinvet/testdata/nondet/clock"
	"github.com/skeinflow/skein/workflow"
)

// Stamp returns the machine's clock: not deterministic.
var Stamp = workflow.New("stamp", func(ctx workflow.Context, _ struct{}) (time.Time, error) {
	return time.Now(), nil
})

// Label reads the clock through a helper of another package.
var Label = workflow.New("label", func(ctx workflow.Context, _ struct{}) (string, error) {
	return clock.Stamp(), nil
})
