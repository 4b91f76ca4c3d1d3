package workflowcheck

import "go/types"

// summary returns the first finding in the body of fn, a helper of this
// package that workflow code calls, checked as workflow code with the
// helpers it calls in turn; nil when there is none, or when fn is not such
// a helper (it is of another package, or takes a workflow.Context and is
// checked as workflow code itself). A directive in the helper suppresses
// the finding there, and so everywhere the helper is called.
func (c *checker) summary(fn *types.Func) *finding {
	decl := c.decls[fn]
	if decl == nil || c.takesWorkflowContext(decl.Type) {
		return nil
	}
	if c.done[fn] {
		return c.summaries[fn] // nil while fn is being summarized: a recursive call
	}
	c.done[fn] = true
	var first *finding
	c.walk(decl.Body, true, func(f finding) {
		if first == nil && !c.suppress.covers(c.pass.Fset, f.pos) {
			first = &f
		}
	})
	c.summaries[fn] = first
	return first
}
