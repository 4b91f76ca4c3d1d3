package skein_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/apisurface"
)

// apiFile is the golden file of the exported API of every public package.
const apiFile = "api/api.txt"

// updateAPI rewrites apiFile from the code: `make api`.
var updateAPI = flag.Bool("update", false, "TestAPI: rewrite "+apiFile+" from the code")

// TestAPI checks that api/api.txt lists the exported API of every public
// package (all but internal/, bench/, examples/ and the commands), one line
// per exported identifier, method and struct field (apisurface.Lines), so
// that every change of the public surface is a reviewed diff of that file.
// After changing the API on purpose, regenerate it with `make api` (go test
// -run '^TestAPI$' . -update) and review the diff.
func TestAPI(t *testing.T) {
	t.Parallel()
	m, err := apisurface.Load(".", false)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, p := range m.Packages {
		if p.Public {
			lines = append(lines, apisurface.Lines(p)...)
		}
	}
	slices.Sort(lines)
	got := strings.Join(lines, "\n") + "\n"
	if *updateAPI {
		if err := os.WriteFile(apiFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(apiFile)
	if err != nil {
		t.Fatalf("%v: generate it with `make api` (go test -run '^TestAPI$' . -update)", err)
	}
	if added, removed := lineDiff(strings.Split(strings.TrimSuffix(string(want), "\n"), "\n"), lines); len(added)+len(removed) > 0 {
		t.Errorf("the exported API differs from %s:\n%s\n"+
			"If the change is meant, regenerate the file with `make api` (go test -run '^TestAPI$' . -update), "+
			"review its diff (every addition is surface users will rely on) and commit it with the code.",
			apiFile, formatDiff(added, removed))
	}
}

// lineDiff returns the lines of got missing from want and those of want
// missing from got, each sorted.
func lineDiff(want, got []string) (added, removed []string) {
	in := func(lines []string) map[string]bool {
		m := make(map[string]bool, len(lines))
		for _, l := range lines {
			m[l] = true
		}
		return m
	}
	inWant, inGot := in(want), in(got)
	for _, l := range got {
		if !inWant[l] {
			added = append(added, l)
		}
	}
	for _, l := range want {
		if !inGot[l] {
			removed = append(removed, l)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}

// formatDiff spells a diff as "+ line" and "- line", at most 50 of each.
func formatDiff(added, removed []string) string {
	var b strings.Builder
	for _, part := range []struct {
		sign  string
		lines []string
	}{{"+ (in the code, not in the file)", added}, {"- (in the file, not in the code)", removed}} {
		if len(part.lines) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s: %d lines\n", part.sign, len(part.lines))
		for i, l := range part.lines {
			if i == 50 {
				fmt.Fprintf(&b, "%c ... and %d more\n", part.sign[0], len(part.lines)-50)
				break
			}
			fmt.Fprintf(&b, "%c %s\n", part.sign[0], l)
		}
	}
	return b.String()
}
