package workflowcheck

import (
	"go/ast"
	"go/types"
	"strings"
)

// Package-level variables. A workflow writing one keeps state outside its
// run's log (lost on replay, shared by every run in the process), so every
// write is reported. A read is reported too, unless the variable is one
// users declare as a definition rather than as state:
//
//   - its type is from the workflow package (the steps, workflows and
//     options declared with workflow.NewStep, workflow.New, ...), or it is
//     an error (a sentinel such as io.EOF or ErrOutOfStock);
//   - it belongs to another module (a library: the standard library or a
//     dependency), other than the standard packages that do I/O: time.UTC,
//     base64.StdEncoding and uuid.Nil are constants in all but name,
//     os.Args and http.DefaultClient are not. A variable of another package
//     of the same module is the user's own state, and is reported.

// pkgVar returns the package-level variable id refers to, or nil.
func (c *checker) pkgVar(id *ast.Ident) *types.Var {
	v, ok := c.pass.TypesInfo.Uses[id].(*types.Var)
	if !ok || v.Pkg() == nil || v.IsField() || v.Parent() != v.Pkg().Scope() {
		return nil
	}
	return v
}

// checkWrite reports a write of a package-level variable through e, the
// target of an assignment, an increment or &.
func (c *checker) checkWrite(e ast.Expr, verb string, report func(finding)) {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			if v := c.pkgVar(x); v != nil {
				c.writes[x] = true
				report(finding{x.Pos(), "workflow code " + verb + " package-level variable " + v.Name() +
					": state outside the run's log is lost on replay and shared by every run; keep it in local variables, or in a step"})
			}
			return
		case *ast.SelectorExpr:
			if c.pkgVar(x.Sel) != nil {
				e = x.Sel // pkg.Var
			} else {
				e = x.X // v.Field
			}
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		default:
			return
		}
	}
}

// checkRead reports a read of a package-level variable that is state.
func (c *checker) checkRead(id *ast.Ident, report func(finding)) {
	v := c.pkgVar(id)
	if v == nil || c.writes[id] || c.definition(v) {
		return
	}
	report(finding{id.Pos(), "workflow code reads package-level variable " + v.Name() +
		": its value is not in the run's log and can change between replays; pass it in the workflow's input, or read it in a step"})
}

// definition reports whether reading v is fine in workflow code.
func (c *checker) definition(v *types.Var) bool {
	errorType := types.Universe.Lookup("error").Type().Underlying().(*types.Interface)
	if fromWorkflow(v.Type()) || types.Implements(v.Type(), errorType) {
		return true
	}
	path := v.Pkg().Path()
	if v.Pkg() == c.pass.Pkg || c.inModule(path) {
		return false
	}
	return !ioPackage(path) && !strings.HasPrefix(path, "math/rand")
}

// fromWorkflow reports whether t, or what it points to, is a type of the
// workflow package.
func fromWorkflow(t types.Type) bool {
	for {
		switch x := types.Unalias(t).(type) {
		case *types.Pointer:
			t = x.Elem()
		case *types.Named:
			return x.Obj().Pkg() != nil && x.Obj().Pkg().Path() == workflowPackage
		default:
			return false
		}
	}
}
