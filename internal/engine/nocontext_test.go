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
	fset, files := parseSources(t)
	for _, f := range files {
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

// parseSources parses the package's non-test files.
func parseSources(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return fset, files
}
