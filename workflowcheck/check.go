package workflowcheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"

	"golang.org/x/tools/go/types/typeutil"
)

// walk visits n, reporting the findings of the workflow code in it:
// inWF says whether n itself runs as workflow code. A function declaration
// is workflow code when it takes a workflow.Context; a function literal
// when it takes one, not when it takes a context.Context first (a step
// body), and otherwise as the code around it.
func (c *checker) walk(n ast.Node, inWF bool, report func(finding)) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Body != nil {
				c.walk(n.Body, c.all || c.takesWorkflowContext(n.Type), report)
			}
			return false
		case *ast.FuncLit:
			mode := inWF
			switch {
			case c.all || c.takesWorkflowContext(n.Type):
				mode = true
			case c.takesStdContext(n.Type):
				mode = false
			}
			c.walk(n.Body, mode, report)
			return false
		case nil:
			return false
		}
		if inWF {
			c.check(n, report)
		}
		return true
	})
}

// check reports the finding n is, if any, in workflow code.
func (c *checker) check(n ast.Node, report func(finding)) {
	switch n := n.(type) {
	case *ast.GoStmt:
		report(finding{n.Go, "go statement: goroutines run in an order replay cannot repeat; " + fixGoroutine})
		c.checkGoroutine(n.Call, true, report)
	case *ast.SelectStmt:
		report(finding{n.Select, "select waits on channels in an order replay cannot repeat: use workflow.Select on futures"})
		c.coverComms(n)
	case *ast.SendStmt:
		if !c.covered[n] {
			report(finding{n.Arrow, "channel send: " + fixChannel})
		}
	case *ast.UnaryExpr:
		switch n.Op {
		case token.ARROW:
			if !c.covered[n] {
				report(finding{n.OpPos, "channel receive: " + fixChannel})
			}
		case token.AND:
			c.checkWrite(n.X, "takes the address of", report)
		}
	case *ast.RangeStmt:
		c.checkRange(n, report)
		if n.Tok == token.ASSIGN {
			for _, e := range []ast.Expr{n.Key, n.Value} {
				c.checkWrite(e, "writes", report)
			}
		}
	case *ast.AssignStmt:
		if n.Tok != token.DEFINE {
			for _, lhs := range n.Lhs {
				c.checkWrite(lhs, "writes", report)
			}
		}
	case *ast.IncDecStmt:
		c.checkWrite(n.X, "writes", report)
	case *ast.CallExpr:
		c.checkCall(n, report)
	case *ast.Ident:
		c.checkRead(n, report)
		c.checkFuncValue(n, report)
	}
}

// coverComms marks the sends and receives of a select's cases: the select's
// own finding stands for them.
func (c *checker) coverComms(n *ast.SelectStmt) {
	for _, cc := range n.Body.List {
		var e ast.Expr
		switch comm := cc.(*ast.CommClause).Comm.(type) {
		case *ast.SendStmt:
			c.covered[comm] = true
		case *ast.ExprStmt:
			e = comm.X
		case *ast.AssignStmt:
			if len(comm.Rhs) == 1 {
				e = comm.Rhs[0]
			}
		}
		if u, ok := ast.Unparen(e).(*ast.UnaryExpr); ok && u.Op == token.ARROW {
			c.covered[u] = true
		}
	}
}

// checkFuncValue reports a function of the rules used as a value (clock :=
// time.Now): it is called later, where the rules cannot see it.
func (c *checker) checkFuncValue(id *ast.Ident, report func(finding)) {
	fn, ok := c.pass.TypesInfo.Uses[id].(*types.Func)
	if !ok || c.covered[id] {
		return
	}
	if msg := callRule(fn); msg != "" {
		report(finding{id.Pos(), displayName(fn) + " used as a value: " + msg})
	}
}

// calleeIdent returns the identifier naming a call's function: f in f(x)
// and pkg.f(x), m in v.m(x).
func calleeIdent(call *ast.CallExpr) *ast.Ident {
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		return fun
	case *ast.SelectorExpr:
		return fun.Sel
	case *ast.IndexExpr: // f[T](x)
		return calleeIdent(&ast.CallExpr{Fun: fun.X})
	case *ast.IndexListExpr:
		return calleeIdent(&ast.CallExpr{Fun: fun.X})
	}
	return nil
}

// checkRange reports ranging over a map, a map's iterator or a channel.
func (c *checker) checkRange(n *ast.RangeStmt, report func(finding)) {
	switch types.Unalias(c.pass.TypesInfo.TypeOf(n.X)).Underlying().(type) {
	case *types.Map:
		report(finding{n.For, "ranging over a map visits its keys in a different order on each replay: " +
			"range over the sorted keys (slices.Sorted(maps.Keys(m)))"})
		return
	case *types.Chan:
		report(finding{n.For, "ranging over a channel receives from it: " + fixChannel})
		return
	}
	call, ok := ast.Unparen(n.X).(*ast.CallExpr)
	if !ok {
		return
	}
	fn, ok := typeutil.Callee(c.pass.TypesInfo, call).(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "maps" {
		return
	}
	switch fn.Name() {
	case "Keys", "Values", "All":
		report(finding{n.For, fmt.Sprintf("maps.%s yields in a different order on each replay: "+
			"range over the sorted keys (slices.Sorted(maps.Keys(m)))", fn.Name())})
	}
}

// checkCall reports a call of a non-deterministic function, a call that
// starts a goroutine, and a call of a same-package helper that is not
// deterministic.
func (c *checker) checkCall(call *ast.CallExpr, report func(finding)) {
	if id := calleeIdent(call); id != nil {
		c.covered[id] = true // a call, not a function value
	}
	fn, ok := typeutil.Callee(c.pass.TypesInfo, call).(*types.Func)
	if !ok {
		return
	}
	if msg := callRule(fn); msg != "" {
		report(finding{call.Lparen, msg})
	}
	if goroutineStarter(fn) {
		if fn.Name() != "AfterFunc" { // time.AfterFunc's own rule says it
			report(finding{call.Lparen, displayName(fn) + " starts a goroutine: " + fixGoroutine})
		}
		for _, arg := range call.Args {
			c.checkGoroutine(arg, false, report)
		}
	}
	if f := c.summary(fn.Origin()); f != nil {
		report(finding{call.Lparen, fmt.Sprintf("%s is not deterministic: %s (%s)",
			fn.Name(), f.msg, c.position(f.pos))})
	}
	var fact nondeterministic
	if fn.Pkg() != c.pass.Pkg && c.module != "" && c.pass.ImportObjectFact(fn.Origin(), &fact) && fact.Module == c.module {
		report(finding{call.Lparen, fmt.Sprintf("%s is not deterministic: %s (%s)", displayName(fn), fact.Msg, fact.At)})
	}
}

// checkGoroutine reports the workflow calls in e, code that runs on another
// goroutine: a function literal, a local variable bound to one, or (when
// call is set) the call a go statement makes.
func (c *checker) checkGoroutine(e ast.Expr, call bool, report func(finding)) {
	var body ast.Node
	switch e := ast.Unparen(e).(type) {
	case *ast.FuncLit:
		body = e.Body
	case *ast.Ident:
		if lit := c.closures[c.pass.TypesInfo.ObjectOf(e)]; lit != nil {
			body = lit.Body
		}
	case *ast.CallExpr:
		if call {
			if lit, ok := ast.Unparen(e.Fun).(*ast.FuncLit); ok {
				c.checkGoroutine(lit, false, report)
			} else if id, ok := ast.Unparen(e.Fun).(*ast.Ident); ok {
				c.checkGoroutine(id, false, report)
			}
			if c.workflowCall(e) {
				report(finding{e.Lparen, workflowCallInGoroutine})
			}
		}
		return
	}
	if body == nil {
		return
	}
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && c.workflowCall(call) {
			report(finding{call.Lparen, workflowCallInGoroutine})
		}
		return true
	})
}

const workflowCallInGoroutine = "workflow call on another goroutine: the workflow API belongs to the workflow's " +
	"own goroutine (such a call fails the run with WORKFLOW_API_MISUSE); " + fixGoroutine

// workflowCall reports whether call passes a workflow.Context or calls a
// method of one.
func (c *checker) workflowCall(call *ast.CallExpr) bool {
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && isWorkflowContext(c.pass.TypesInfo.TypeOf(sel.X)) {
		return true
	}
	for _, arg := range call.Args {
		if isWorkflowContext(c.pass.TypesInfo.TypeOf(arg)) {
			return true
		}
	}
	return false
}

// position formats pos as file:line.
func (c *checker) position(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}
