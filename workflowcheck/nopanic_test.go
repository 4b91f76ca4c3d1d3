package workflowcheck_test

import (
	"testing"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/skeinflow/skein/workflowcheck"
)

// TestNoPanic runs the analyzer over the whole standard library and every
// package of this module (tests and the integration tag included), checking
// every function as workflow code, and over the module as it is, so that
// each rule meets every kind of Go code there is. A panic fails the test
// binary; an analysis error fails the test. What it reports does not matter
// here.
func TestNoPanic(t *testing.T) {
	t.Parallel()
	all := workflowcheck.New(workflowcheck.Config{AllFunctions: true})
	for _, tc := range []struct {
		name      string
		patterns  []string
		tests     bool
		analyzers []*analysis.Analyzer
	}{
		{"std", []string{"std"}, false, []*analysis.Analyzer{all}},
		{"module", []string{"github.com/skeinflow/skein/..."}, true, []*analysis.Analyzer{all, workflowcheck.Analyzer}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &packages.Config{Mode: packages.LoadAllSyntax, Tests: tc.tests, BuildFlags: []string{"-tags", "integration"}}
			pkgs, err := packages.Load(cfg, tc.patterns...)
			if err != nil {
				t.Fatal(err)
			}
			if n := packages.PrintErrors(pkgs); n > 0 {
				t.Fatalf("%d errors loading %v", n, tc.patterns)
			}
			for _, a := range tc.analyzers { // one at a time: they share a fact type
				if findings := analyze(t, a, pkgs); a == all && findings == 0 {
					t.Error("checking every function found nothing: the rules did not run")
				}
			}
		})
	}
}

// analyze runs a on pkgs, fails t on an analysis error and returns the
// number of findings.
func analyze(t *testing.T, a *analysis.Analyzer, pkgs []*packages.Package) int {
	t.Helper()
	graph, err := checker.Analyze([]*analysis.Analyzer{a}, pkgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	roots, findings := 0, 0
	for _, act := range graph.Roots {
		roots++
		findings += len(act.Diagnostics)
		if act.Err != nil {
			t.Errorf("%s: %v", act, act.Err)
		}
	}
	if roots != len(pkgs) {
		t.Errorf("analyzed %d packages of %d", roots, len(pkgs))
	}
	t.Logf("%d packages, %d findings", roots, findings)
	return findings
}
