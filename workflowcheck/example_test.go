package workflowcheck_test

import (
	"fmt"
	"path/filepath"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/skeinflow/skein/workflowcheck"
)

// The analyzer runs like any go/analysis analyzer: from the skeinvet
// command (skeinvet ./... or go vet -vettool=$(which skeinvet) ./...), or
// from a program, as here, on testdata/example/order.go.
func Example() {
	pkgs, err := packages.Load(&packages.Config{Mode: packages.LoadAllSyntax, Dir: "testdata/example"}, ".")
	if err != nil || packages.PrintErrors(pkgs) > 0 {
		fmt.Println("load:", err)
		return
	}
	graph, err := checker.Analyze([]*analysis.Analyzer{workflowcheck.Analyzer}, pkgs, nil)
	if err != nil {
		fmt.Println("analyze:", err)
		return
	}
	for _, act := range graph.Roots {
		for _, d := range act.Diagnostics {
			pos := act.Package.Fset.Position(d.Pos)
			fmt.Printf("%s:%d: %s\n", filepath.Base(pos.Filename), pos.Line, d.Message)
		}
	}
	// Output:
	// order.go:18: time.Now reads the machine clock: use ctx.Now(), the workflow's time
	// order.go:20: ranging over a map visits its keys in a different order on each replay: range over the sorted keys (slices.Sorted(maps.Keys(m)))
}
