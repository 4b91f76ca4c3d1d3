package skein_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/apisurface"
)

// TestAliasDocs checks the facades' doc rule: go doc and pkg.go.dev show
// an alias with its own comment only, not its target's methods, so the
// comment of every alias (in a public package) of a type declared under
// internal/ names each exported method of that type, as a list item
// ("  - Name ..."). A method added to an internal/sdk type without its
// line in the facade fails here.
func TestAliasDocs(t *testing.T) {
	t.Parallel()
	m, err := apisurface.Load(".", false)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, p := range m.Packages {
		if !p.Public {
			continue
		}
		for name, doc := range aliasDocs(t, p.Files) {
			tn, ok := p.Types.Scope().Lookup(name).(*types.TypeName)
			if !ok {
				continue
			}
			missing := undocumentedMethods(tn, doc)
			if missing == nil {
				continue
			}
			checked++
			if len(missing) > 0 {
				t.Errorf("%s.%s is an alias of an internal type; its comment does not list its methods and fields %v (one line each: \"//   - Name does what\")",
					p.Rel, name, missing)
			}
		}
	}
	if checked == 0 {
		t.Error("no alias of an internal type found in the public packages: the facades workflow, client and worker have them")
	}
}

// aliasDocs returns the doc comments of the type aliases declared in files,
// by name.
func aliasDocs(t *testing.T, files []string) map[string]string {
	t.Helper()
	docs := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				if !ts.Assign.IsValid() {
					continue
				}
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				docs[ts.Name.Name] = doc.Text() // "" for none
			}
		}
	}
	return docs
}

// undocumentedMethods returns the exported methods (and, of a struct, the
// exported fields) of the internal type the alias tn stands for that doc
// does not list, sorted; nil if tn does not
// stand for a type declared under internal/.
func undocumentedMethods(tn *types.TypeName, doc string) []string {
	named, ok := types.Unalias(tn.Type()).(*types.Named)
	if !tn.IsAlias() || !ok || named.Obj().Pkg() == nil || !slices.Contains(strings.Split(named.Obj().Pkg().Path(), "/"), "internal") {
		return nil
	}
	ms := types.NewMethodSet(types.NewPointer(named))
	if types.IsInterface(named) {
		ms = types.NewMethodSet(named)
	}
	names := []string{}
	for i := range ms.Len() {
		names = append(names, ms.At(i).Obj().Name())
	}
	if st, ok := named.Underlying().(*types.Struct); ok {
		for f := range st.Fields() {
			names = append(names, f.Name())
		}
	}
	missing := []string{}
	for _, name := range names {
		if token.IsExported(name) && !regexp.MustCompile(`(?m)^\s*- `+name+`\b`).MatchString(doc) {
			missing = append(missing, name)
		}
	}
	return missing
}
