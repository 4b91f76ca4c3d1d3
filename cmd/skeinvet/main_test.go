package main_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBothWays builds skeinvet and runs it the two ways the docs show, on
// testdata/nondet (two findings: time.Now in a workflow, and in a helper of
// another package of the module) and on the quickstart example (none):
// standalone, where a finding exits 3, and as go vet's tool, where it exits
// 1.
func TestBothWays(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "skeinvet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	findings := []string{
		"nondet.go:13:17: time.Now reads the machine clock: use ctx.Now()",
		"nondet.go:18:20: clock.Stamp is not deterministic: time.Now reads the machine clock", // through a fact
	}
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"standalone finding", []string{bin, "./testdata/nondet"}, 3, findings},
		{"standalone clean", []string{bin, "../../examples/quickstart"}, 0, nil},
		{"vettool finding", []string{"go", "vet", "-vettool=" + bin, "./testdata/nondet"}, 1, findings},
		{"vettool clean", []string{"go", "vet", "-vettool=" + bin, "../../examples/quickstart"}, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command(tc.args[0], tc.args[1:]...).CombinedOutput()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode {
				t.Errorf("%v exited %d, want %d\n%s", tc.args, code, tc.wantCode, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("%v printed\n%s\nwant it to contain %q", tc.args, out, want)
				}
			}
			if tc.want == nil && len(out) > 0 {
				t.Errorf("%v printed %s, want nothing", tc.args, out)
			}
		})
	}
}
