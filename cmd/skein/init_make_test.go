package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitMakefileWithoutSAM: in a project skein init wrote, on a machine
// without the SAM CLI, make build builds ./bootstrap alone and says why
// (it used to fail with "sam: not found", Error 127), and make deploy
// fails saying what it needs. GO=true stands in for the Go build.
func TestInitMakefileWithoutSAM(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed")
	}
	dir := filepath.Join(t.TempDir(), "orders")
	cli("init", "-replace", repoRoot(t), "-tidy=false", dir).expect(t, 0, "make deploy")
	noSAM := "SAM=" + filepath.Join(dir, "no-such-sam")
	out, err := exec.Command("make", "-C", dir, "build", noSAM, "GO=true").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "not found: building ./bootstrap alone") {
		t.Errorf("make build without sam: %v\n%s", err, out)
	}
	out, err = exec.Command("make", "-C", dir, "deploy", noSAM, "GO=true").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "make deploy needs the AWS SAM CLI") {
		t.Errorf("make deploy without sam: %v, want a failure naming the SAM CLI\n%s", err, out)
	}
}
