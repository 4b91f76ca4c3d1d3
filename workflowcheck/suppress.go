package workflowcheck

import (
	"go/ast"
	"go/token"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// directive is the comment that suppresses the analyzer's findings on its
// own line and on the line below it. It takes a reason:
//
//	//skein:nondeterministic-ok the flag is read once, at deploy time
const directive = "//skein:nondeterministic-ok"

// suppressions holds the lines the directive covers, per file.
type suppressions map[*token.File]map[int]bool

// collectSuppressions finds the directives of the pass's files. A directive
// without a reason is reported and suppresses nothing.
func collectSuppressions(pass *analysis.Pass) suppressions {
	s := suppressions{}
	for _, f := range pass.Files {
		tf := pass.Fset.File(f.Pos())
		if tf == nil {
			continue
		}
		for _, group := range f.Comments {
			for _, c := range group.List {
				reason, ok := parseDirective(c)
				if !ok {
					continue
				}
				if reason == "" {
					pass.Reportf(c.Pos(), "%s needs a reason: say why the line is safe to replay", directive)
					continue
				}
				if s[tf] == nil {
					s[tf] = map[int]bool{}
				}
				line := tf.Line(c.Pos())
				s[tf][line] = true
				s[tf][line+1] = true
			}
		}
	}
	return s
}

// parseDirective returns the reason a directive comment gives, and whether
// c is a directive.
func parseDirective(c *ast.Comment) (string, bool) {
	rest, ok := strings.CutPrefix(c.Text, directive)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// covers reports whether a directive covers pos.
func (s suppressions) covers(fset *token.FileSet, pos token.Pos) bool {
	tf := fset.File(pos)
	if tf == nil {
		return false
	}
	return s[tf][tf.Line(pos)]
}
