package sdk

import (
	"strings"
	"testing"

	"github.com/skeinflow/skein/world"
)

// TestRequestErrorClipsLongNames: a refusal of a 100 KB workflow name (or
// key, or token) says so in a message of a line, not the name again.
func TestRequestErrorClipsLongNames(t *testing.T) {
	long := strings.Repeat("w", 100_000)
	for _, e := range []*RequestError{
		{Kind: ErrUnknownWorkflow, Workflow: long},
		{Kind: ErrUnknownWorkflow, Workflow: long, Registered: []string{"a"}},
		{Kind: world.ErrConflict, Workflow: long, Key: long, Requested: long, RunID: "wrun_1"},
		{Kind: world.ErrNotFound, Token: long},
	} {
		msg := e.Error()
		if len(msg) > 1000 || !strings.Contains(msg, "(100000 bytes)") {
			t.Errorf("a message of %d bytes: %.300s", len(msg), msg)
		}
	}
	if got := (&RequestError{Kind: ErrUnknownWorkflow, Workflow: "short"}).Error(); !strings.Contains(got, `"short"`) {
		t.Errorf("a short name: %s", got)
	}
}
