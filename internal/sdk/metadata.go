package sdk

import (
	"context"
	"time"

	"github.com/skeinflow/skein/internal/engine"
)

// WorkflowMetadata describes a run: in a workflow from Context.Workflow, in
// a step from WorkflowMetadataFrom. Both give the same values.
type WorkflowMetadata struct {
	WorkflowName string
	RunID        string
	// StartedAt is when the run was created.
	StartedAt time.Time
}

// StepMetadata describes the step attempt running. In a compensation
// (WithCompensation), StepName names the compensation step, StepID the
// step it undoes, and Compensating is set.
type StepMetadata struct {
	StepName     string
	StepID       string
	Compensating bool
	// Attempt is 1-based: 1 for the first attempt, 2 for the first retry.
	// An attempt cut short by the loss of its worker (killed, crashed,
	// timed out) runs again under the same number: only the step's own
	// failures count (see EngineOptions.MaxInterruptions).
	Attempt int
	// StartedAt is when the step's first attempt started.
	StartedAt time.Time
}

// StepMetadataFrom returns the metadata of the step ctx belongs to; false
// outside a step.
func StepMetadataFrom(ctx context.Context) (StepMetadata, bool) {
	info, ok := engine.StepInfoFrom(ctx)
	if !ok {
		return StepMetadata{}, false
	}
	return StepMetadata{StepName: info.StepName, StepID: info.StepID, Compensating: info.Compensating, Attempt: info.Attempt, StartedAt: info.StartedAt}, true
}

// WorkflowMetadataFrom returns the metadata of the run whose step ctx
// belongs to; false outside a step.
func WorkflowMetadataFrom(ctx context.Context) (WorkflowMetadata, bool) {
	info, ok := engine.StepInfoFrom(ctx)
	if !ok {
		return WorkflowMetadata{}, false
	}
	return WorkflowMetadata{WorkflowName: info.WorkflowName, RunID: info.RunID, StartedAt: info.RunCreatedAt}, true
}

func timeNow(ctx context.Context) time.Time {
	if info, ok := engine.StepInfoFrom(ctx); ok && info.Now != nil {
		return info.Now()
	}
	return time.Now()
}
