package workflowcheck

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// workflowPackage is the import path of Skein's SDK, whose Context marks
// workflow code (workflow.Context is an alias of it).
const workflowPackage = "github.com/skeinflow/skein/internal/sdk"

// sdkPackage reports whether path is the SDK or one of its facades: they
// implement the deterministic API (the facades' wrappers take a
// workflow.Context), so the analyzer does not check them.
func sdkPackage(path string) bool {
	switch path {
	case workflowPackage, "github.com/skeinflow/skein/workflow", "github.com/skeinflow/skein/client", "github.com/skeinflow/skein/worker":
		return true
	}
	return false
}

const doc = `report non-deterministic code in Skein workflow functions

A workflow function (a function or function literal with a parameter of
type workflow.Context) is replayed from the run's event log, so it must do
the same thing every time it runs. workflowcheck reports, inside workflow
functions and the helpers of the same module they call: reading the clock
or sleeping (time.Now, time.Sleep, ...), math/rand and crypto/rand, ranging
over a map, go statements, channel operations and select, I/O (os, net,
net/http, io, syscall), printing and the default loggers, reading or
writing package-level variables, and workflow calls from goroutines. Step
bodies (function literals taking a context.Context) are not workflow code.

A finding is suppressed by a comment on its line or the line above:

	//skein:nondeterministic-ok <reason>`

// Config tunes an analyzer made by New.
type Config struct {
	// AllFunctions checks every function of every package as if it were
	// workflow code, step bodies and the workflow package included. It
	// exists to exercise the analyzer on code that has no workflows (the
	// standard library); its findings there mean nothing.
	AllFunctions bool
}

// Analyzer is the determinism analyzer with the default configuration.
var Analyzer = New(Config{})

// New returns a determinism analyzer configured by cfg.
func New(cfg Config) *analysis.Analyzer {
	a := &analysis.Analyzer{
		Name: "workflowcheck",
		Doc:  doc,
		URL:  "https://pkg.go.dev/github.com/skeinflow/skein/workflowcheck",
		Run:  func(pass *analysis.Pass) (any, error) { return nil, run(pass, cfg) },
	}
	if !cfg.AllFunctions {
		// Facts make a driver analyze every dependency too; checking every
		// function of each is what AllFunctions does not need.
		a.FactTypes = []analysis.Fact{new(nondeterministic)}
	}
	return a
}

// nondeterministic is the fact an exported function has when its body,
// checked as workflow code, has a finding: workflow code of another
// package of the same module that calls it reports the call.
type nondeterministic struct {
	Module string // the function's module
	Msg    string // the first finding in its body
	At     string // where it is, file:line
}

func (*nondeterministic) AFact() {}

func (f *nondeterministic) String() string { return "nondeterministic: " + f.Msg + " (" + f.At + ")" }

// stdPackage reports whether path looks like a package of the standard
// library: its first element has no dot. (A module's own path can look
// like one too: see inModule.)
func stdPackage(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func run(pass *analysis.Pass, cfg Config) error {
	std := pass.Module == nil && stdPackage(pass.Pkg.Path())
	if !cfg.AllFunctions && (sdkPackage(pass.Pkg.Path()) || std) {
		return nil // the SDK implements the deterministic API; the rules name what matters in std
	}
	c := &checker{
		pass:      pass,
		all:       cfg.AllFunctions,
		suppress:  collectSuppressions(pass),
		decls:     map[*types.Func]*ast.FuncDecl{},
		closures:  map[types.Object]*ast.FuncLit{},
		summaries: map[*types.Func]*finding{},
		done:      map[*types.Func]bool{},
		writes:    map[*ast.Ident]bool{},
		covered:   map[ast.Node]bool{},
	}
	if pass.Module != nil && !cfg.AllFunctions {
		c.module = pass.Module.Path // facts: see New
	}
	c.index()
	for _, f := range pass.Files {
		c.walk(f, false, c.report)
	}
	c.exportFacts()
	return nil
}

// inModule reports whether path is a package of the pass's module.
func (c *checker) inModule(path string) bool {
	return c.module != "" && (path == c.module || strings.HasPrefix(path, c.module+"/"))
}

// exportFacts gives each exported function of the package with a finding
// in its body its nondeterministic fact. Outside a module (GOPATH mode)
// there is none: which packages are the user's own is not known.
func (c *checker) exportFacts() {
	if c.module == "" {
		return
	}
	for fn := range c.decls {
		if !fn.Exported() {
			continue
		}
		if f := c.summary(fn); f != nil {
			c.pass.ExportObjectFact(fn, &nondeterministic{Module: c.module, Msg: f.msg, At: c.position(f.pos)})
		}
	}
}

// finding is one non-deterministic construct.
type finding struct {
	pos token.Pos
	msg string
}

// checker holds what one pass needs.
type checker struct {
	pass     *analysis.Pass
	all      bool
	module   string // the package's module path; "" outside a module
	suppress suppressions
	// decls are the package's function declarations, by function, for the
	// helpers workflow code calls.
	decls map[*types.Func]*ast.FuncDecl
	// closures are local variables bound once to a function literal, for
	// `f := func() {...}; go f()`.
	closures map[types.Object]*ast.FuncLit
	// summaries holds each helper's first finding (nil: none); done marks
	// the helpers summarized or being summarized.
	summaries map[*types.Func]*finding
	done      map[*types.Func]bool
	// writes are the identifiers checkWrite reported, not reads.
	writes map[*ast.Ident]bool
	// covered are nodes another finding stands for: the channel operations
	// of a select's cases, the functions of calls (not values).
	covered map[ast.Node]bool
}

// report reports f unless a directive covers it.
func (c *checker) report(f finding) {
	if !c.suppress.covers(c.pass.Fset, f.pos) {
		c.pass.Report(analysis.Diagnostic{Pos: f.pos, Message: f.msg})
	}
}

// index fills decls and closures.
func (c *checker) index() {
	assigned := map[types.Object]int{}
	bind := func(id *ast.Ident, e ast.Expr) {
		obj := c.pass.TypesInfo.ObjectOf(id)
		if obj == nil {
			return
		}
		assigned[obj]++
		if lit, ok := ast.Unparen(e).(*ast.FuncLit); ok {
			c.closures[obj] = lit
		}
	}
	for _, f := range c.pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if fn, ok := c.pass.TypesInfo.Defs[n.Name].(*types.Func); ok && n.Body != nil {
					c.decls[fn] = n
				}
			case *ast.AssignStmt:
				for i, lhs := range n.Lhs {
					if id, ok := ast.Unparen(lhs).(*ast.Ident); ok && len(n.Lhs) == len(n.Rhs) {
						bind(id, n.Rhs[i])
					} else if ok {
						bind(id, nil)
					}
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if len(n.Names) == len(n.Values) {
						bind(id, n.Values[i])
					}
				}
			}
			return true
		})
	}
	for obj := range c.closures {
		if assigned[obj] != 1 {
			delete(c.closures, obj) // rebound: which literal runs is not known
		}
	}
}

// isContext reports whether t is the named type pkg.name.
func isContext(t types.Type, pkg, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == pkg && n.Obj().Name() == name
}

// isWorkflowContext reports whether t is workflow.Context.
func isWorkflowContext(t types.Type) bool { return isContext(t, workflowPackage, "Context") }

// takesWorkflowContext reports whether a function of type ft has a
// workflow.Context parameter.
func (c *checker) takesWorkflowContext(ft *ast.FuncType) bool {
	for _, field := range ft.Params.List {
		if isWorkflowContext(c.pass.TypesInfo.TypeOf(field.Type)) {
			return true
		}
	}
	return false
}

// takesStdContext reports whether a function of type ft takes a
// context.Context first, as step bodies do.
func (c *checker) takesStdContext(ft *ast.FuncType) bool {
	if len(ft.Params.List) == 0 {
		return false
	}
	return isContext(c.pass.TypesInfo.TypeOf(ft.Params.List[0].Type), "context", "Context")
}
