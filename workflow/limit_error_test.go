package workflow_test

import (
	"errors"
	"testing"

	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestRunFailedOverALimitIsLimitExceeded: a run failed for passing one of
// its limits reaches its caller as a *RunFailedError that matches
// world.ErrLimitExceeded (its *world.LimitError does not survive the log;
// its code does); other failures do not match.
func TestRunFailedOverALimitIsLimitExceeded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		code string
		want bool
	}{
		{world.CodeMaxEventsExceeded, true},
		{world.CodeLimitExceeded, true},
		{world.CodeUserError, false},
	} {
		err := error(&workflow.RunFailedError{RunID: "wrun_x", Code: c.code, Cause: errors.New("boom")})
		if got := errors.Is(err, world.ErrLimitExceeded); got != c.want {
			t.Errorf("code %s: errors.Is(err, world.ErrLimitExceeded) = %v, want %v", c.code, got, c.want)
		}
	}
}
