// Command skeinvet runs the workflowcheck analyzer, which reports
// non-deterministic code in Skein workflow functions. Run it on packages,
//
//	skeinvet ./...
//
// or as go vet's tool, with go vet's build flags and caching:
//
//	go vet -vettool=$(which skeinvet) ./...
//
// It exits non-zero when it reports a finding. A comment
// //skein:nondeterministic-ok <reason> on a finding's line or the line above
// suppresses it. See the workflowcheck package for what it reports.
package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/skeinflow/skein/workflowcheck"
)

func main() { singlechecker.Main(workflowcheck.Analyzer) }
