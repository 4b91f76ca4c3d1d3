package workflowcheck_test

import (
	"path/filepath"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/skeinflow/skein/workflowcheck"
)

// TestFixtures runs the analyzer on testdata/src/example.com/flows: every
// finding a fixture expects (a `// want` comment) and no other. The
// fixtures import a stub of the workflow package with the real one's path.
func TestFixtures(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, filepath.Join(analysistest.TestData(), "mod"), workflowcheck.Analyzer, "example.com/flows")
}
