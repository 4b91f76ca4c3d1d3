package skein_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this module's path; every package below is under it.
const module = "github.com/skeinflow/skein"

// examplesImportedBy lists the only packages outside examples/ allowed to
// import a package of examples/, and what they import, from test files
// only. integration/ is the end-to-end suite of Skein's own stack: it builds
// the bootstrap template.yaml deploys (examples/lambda) and starts runs of
// its workflows, so it needs their typed handles. Library tests use
// internal/testflows instead.
var examplesImportedBy = map[string][]string{
	module + "/integration": {module + "/examples/lambda/demo"},
}

// encryptWiring lists the only packages outside encrypt/ whose non-test
// code may import a package of encrypt/: the wiring that wraps a World
// with keys from configuration (skeinlambda, from the environment; the
// skein command, from -keys and -kms-key). The engine, the SDK, the API
// and the dashboard see only a "key unavailable" error
// (world.ErrKeyUnavailable) and internal/sealmark, the seam that
// recognises sealed bytes without opening them; tests may import encrypt
// to seal what they read.
var encryptWiring = []string{module + "/skeinlambda", module + "/cmd/skein"}

// skeintestImports are the packages of the module that skeintest, the test
// kit users import in their own tests, may import (its tests may import
// more). It runs workflows on the local world, so it never needs AWS.
var skeintestImports = []string{module + "/workflow", module + "/client", module + "/worker", module + "/internal/sdk", module + "/world", module + "/localworld", module + "/internal/engine", module + "/internal/knobs"}

// facadeImports are the packages of the module each of the SDK's public
// facades may import (non-test code): internal/sdk, which implements
// them, world, and the facades before it in the order workflow, client,
// worker. internal/sdk imports none of them, so there is no cycle and each
// type has one public home.
var facadeImports = map[string][]string{
	module + "/workflow": {module + "/internal/sdk", module + "/world"},
	module + "/client":   {module + "/internal/sdk", module + "/world", module + "/workflow"},
	module + "/worker":   {module + "/internal/sdk", module + "/world", module + "/workflow", module + "/client", module + "/internal/engine"},
}

// listedPackage is one entry of `go list -json -test`: a package, or a
// test variant of one (ForTest names the package under test), or a test
// binary (ImportPath ending in ".test").
type listedPackage struct {
	ImportPath string
	ForTest    string
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// owner is the package p belongs to: the package under test for a test
// variant or test binary, else p itself.
func (p listedPackage) owner() string {
	if p.ForTest != "" {
		return p.ForTest
	}
	return strings.TrimSuffix(trimVariant(p.ImportPath), ".test")
}

// testOnly reports whether p exists only for tests (a test variant, the
// external test package or the test binary).
func (p listedPackage) testOnly() bool {
	return p.ForTest != "" || strings.HasSuffix(p.ImportPath, ".test")
}

// trimVariant returns the package a listed path stands for: it drops the
// " [x.test]" suffix go list puts on a test variant's path and the "_test"
// of an external test package's.
func trimVariant(path string) string {
	if i := strings.IndexByte(path, ' '); i >= 0 {
		path = path[:i]
	}
	return strings.TrimSuffix(path, "_test")
}

// under reports whether path is dir or a package below it (dir relative to
// the module).
func under(path, dir string) bool {
	full := module + "/" + dir
	return path == full || strings.HasPrefix(path, full+"/")
}

// listModule runs `go list -e -test -json -tags integration ./...` from the
// module's root and decodes its entries.
func listModule(t *testing.T) []listedPackage {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the import-boundary test runs the go command: %v", err)
	}
	cmd := exec.Command(goCmd, "list", "-e", "-test", "-tags", "integration",
		"-json=ImportPath,ForTest,Imports,Deps,Error", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportBoundaries enforces the layering ARCHITECTURE.md describes,
// tests included (the integration tag too):
//
//   - world/ (the seam and its conformance suite), internal/sdk/ (the SDK)
//     and its facades workflow/, client/ and worker/, and skeinhttp/ (the live subscription over HTTP, which a UI mounts over
//     any World) depend on no AWS or Lambda package (github.com/aws/...),
//     directly or not, so that any World and the local worker build
//     without them;
//   - world/ depends on no other package of this module: it is the seam
//     every other layer depends on;
//   - schedule/ (expressions and the schedule message, used by the local
//     worker and the Lambda handler alike) depends on no AWS package and no
//     other package of this module;
//   - examples/ import nothing under internal/: they show what a user's
//     code can do, and a user's module cannot import internal/;
//   - nothing outside examples/ imports examples/, but the exceptions in
//     examplesImportedBy (from test files only): the library does not rest
//     on its examples;
//   - internal/testflows, the library tests' fixture, and
//     internal/configtest, the Worlds' shared config checks, are imported
//     by test files only;
//   - skeintest, which users import in their tests, depends on no AWS or
//     Lambda package and imports only skeintestImports of the module;
//   - webui, the dashboard, depends on no AWS or Lambda package (its tests
//     included): it serves any World through client.Client, and a
//     worker on the local world embeds it without pulling AWS in;
//   - workflowcheck (the determinism analyzer) depends on no other package
//     of this module: it knows workflow.Context by its target's import path, so
//     that analyzing a user's code loads nothing of Skein's runtime;
//   - only workflowcheck and cmd/skeinvet import golang.org/x/tools: the SDK,
//     the worlds and the Lambda runtime do not carry the analysis framework;
//   - the facades import only facadeImports of the module, and
//     internal/sdk (its tests included) imports none of them;
//   - encryption sits behind one seam: outside encrypt/, only the wiring
//     (encryptWiring) imports a package of encrypt/, tests aside.
func TestImportBoundaries(t *testing.T) {
	t.Parallel()
	pkgs := listModule(t)
	seen := map[string]bool{}
	reported := map[string]bool{} // one report per package, test variants folded in
	report := func(format string, args ...any) {
		if msg := fmt.Sprintf(format, args...); !reported[msg] {
			reported[msg] = true
			t.Error(msg)
		}
	}
	for _, p := range pkgs {
		owner := p.owner()
		seen[owner] = true
		if under(owner, "world") || under(owner, "workflow") || under(owner, "client") || under(owner, "worker") || under(owner, "internal/sdk") ||
			under(owner, "skeintest") || under(owner, "skeinhttp") || under(owner, "webui") {
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/aws/") {
					report("%s (or its tests) depends on %s: world/, internal/sdk/, workflow/, client/, worker/, skeintest/, skeinhttp/ and webui/ must not depend on AWS or Lambda packages", owner, d)
				}
			}
		}
		if under(owner, "schedule") {
			for _, d := range p.Deps {
				if d := trimVariant(d); strings.HasPrefix(d, "github.com/aws/") || (strings.HasPrefix(d, module+"/") && !under(d, "schedule")) {
					report("%s (or its tests) depends on %s: schedule/ depends on no AWS package and no other package of the module", owner, d)
				}
			}
		}
		if under(owner, "world") {
			for _, d := range p.Deps {
				if d := trimVariant(d); strings.HasPrefix(d, module+"/") && !under(d, "world") {
					report("%s (or its tests) depends on %s: world/ is the seam and depends on no other package of the module", owner, d)
				}
			}
		}
		if under(owner, "workflowcheck") {
			for _, d := range p.Deps {
				if d := trimVariant(d); strings.HasPrefix(d, module+"/") && !under(d, "workflowcheck") {
					report("%s (or its tests) depends on %s: the analyzer depends on no other package of the module", owner, d)
				}
			}
		}
		if strings.HasSuffix(p.ImportPath, ".test") {
			continue // the generated test main imports the test packages
		}
		for _, imp := range p.Imports {
			imp = trimVariant(imp)
			switch {
			case under(owner, "examples") && under(imp, "internal"):
				report("%s imports %s: examples/ must not import internal/", owner, imp)
			case !under(owner, "examples") && under(imp, "examples") &&
				(!p.testOnly() || !slices.Contains(examplesImportedBy[owner], imp)):
				report("%s imports %s: nothing outside examples/ imports examples/ (exceptions, from tests only: examplesImportedBy)", p.ImportPath, imp)
			case (imp == module+"/internal/testflows" || imp == module+"/internal/configtest") && !p.testOnly():
				report("%s imports %s: the test fixture is for _test.go files only", owner, imp)
			case under(owner, "skeintest") && !p.testOnly() && strings.HasPrefix(imp, module+"/") &&
				!slices.Contains(skeintestImports, imp):
				report("%s imports %s: skeintest imports only %v of the module", owner, imp, skeintestImports)
			case facadeImports[owner] != nil && !p.testOnly() && strings.HasPrefix(imp, module+"/") && !slices.Contains(facadeImports[owner], imp):
				report("%s imports %s: the facade imports only %v of the module", owner, imp, facadeImports[owner])
			case under(owner, "internal/sdk") && facadeImports[imp] != nil:
				report("%s imports %s: internal/sdk imports none of its facades", p.ImportPath, imp)
			case strings.HasPrefix(imp, "golang.org/x/tools/") && !under(owner, "workflowcheck") && !under(owner, "cmd/skeinvet"):
				report("%s imports %s: only workflowcheck and cmd/skeinvet use the analysis framework", owner, imp)
			case under(imp, "encrypt") && !under(owner, "encrypt") && !p.testOnly() && !slices.Contains(encryptWiring, owner):
				report("%s imports %s: outside encrypt/ only the wiring (%v) imports it; others use world.ErrKeyUnavailable and internal/sealmark", owner, imp, encryptWiring)
			}
		}
	}
	// The listing must have covered the layers the rules are about.
	for _, dir := range []string{"world", "world/worldtest", "workflow", "client", "worker", "internal/sdk", "schedule", "skeinhttp", "internal/engine", "internal/testflows", "examples/lambda", "integration", "skeintest", "workflowcheck", "cmd/skeinvet", "webui", "encrypt", "skeinlambda", "cmd/skein", "handler"} {
		if !seen[module+"/"+dir] {
			t.Errorf("go list did not list %s/%s", module, dir)
		}
	}
}
