package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoContextInStructs keeps contexts out of the engine's structs: a
// context is passed to each call that needs it, so that which context a
// World call runs under is read at the call, not traced through whoever
// last assigned a field.
func TestNoContextInStructs(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			st, ok := n.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				if sel, ok := field.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Context" {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "context" {
						t.Errorf("%s: a struct field holds a context.Context; pass it to the calls instead", fset.Position(field.Pos()))
					}
				}
			}
			return true
		})
	}
}
