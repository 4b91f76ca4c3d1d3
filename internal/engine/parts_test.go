package engine

import (
	"go/ast"
	"testing"
)

// TestPartsPointDown keeps the engine's parts layered: each holds pointers
// to the shared port and to the parts it calls, never to one above it, and
// no struct but Engine holds an Engine. A field that points up would let a
// delivery go back up the chain that doc.go and ARCHITECTURE.md walk down.
func TestPartsPointDown(t *testing.T) {
	t.Parallel()
	// The engine's parts by level (doc.go, "The engine's parts"): a part
	// may hold a pointer to a part of a lower level only.
	partLevels := map[string]int{
		"port":        0,
		"tracing":     1,
		"stepRunner":  2,
		"compensator": 3,
		"rest":        4,
		"parts":       5,
		"committer":   6,
		"inflight":    6,
		"session":     7,
		"runLeases":   8,
		"gate":        9,
		"background":  9,
		"Engine":      10,
	}
	fset, files := parseSources(t)
	seen := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			owner := ts.Name.Name
			level, isPart := partLevels[owner]
			seen[owner] = seen[owner] || isPart
			for _, field := range st.Fields.List {
				held := fieldTypeName(field.Type)
				hl, heldPart := partLevels[held]
				switch {
				case held == "Engine" && owner != "Engine":
					t.Errorf("%s: %s holds an Engine; hold the parts it calls instead", fset.Position(field.Pos()), owner)
				case isPart && heldPart && hl >= level:
					t.Errorf("%s: %s (level %d) holds %s (level %d): a part holds only parts below it", fset.Position(field.Pos()), owner, level, held, hl)
				}
			}
			return true
		})
	}
	for name := range partLevels {
		if !seen[name] {
			t.Errorf("part %s is not a struct type of the package: update partLevels and doc.go", name)
		}
	}
}

// fieldTypeName is the name of the type a field holds, through a pointer:
// "" for any other kind of type.
func fieldTypeName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
