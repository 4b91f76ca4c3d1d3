// Package nondet is a workflow with one finding, for skeinvet's test.
package nondet

import (
	"time"

	"github.com/skeinflow/skein/workflow"
)

// Stamp returns the machine's clock: not deterministic.
var Stamp = workflow.New("stamp", func(ctx workflow.Context, _ struct{}) (time.Time, error) {
	return time.Now(), nil
})
