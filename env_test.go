package skein_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/apisurface"
)

// TestEnvReadOnce checks that the code reads every environment variable in
// one place, internal/envvars (Read), whatever program it is for: the
// wiring parses the values from there, so that a variable's name and what
// an unset one means are written once (`make surface` lists the read
// sites). A new variable goes into envvars.Read, not an os.Getenv of its
// own.
func TestEnvReadOnce(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	m, err := apisurface.Load(root, true)
	if err != nil {
		t.Fatal(err)
	}
	reads, err := m.EnvReads(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(reads) == 0 {
		t.Fatal("no environment variable read anywhere: the count is broken")
	}
	for name, sites := range reads {
		if len(sites) != 1 || !strings.HasPrefix(sites[0], "internal/envvars/") {
			t.Errorf("%s is read at %s: read it in internal/envvars (Read) alone", name, strings.Join(sites, ", "))
		}
	}
}
