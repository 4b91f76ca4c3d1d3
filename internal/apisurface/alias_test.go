package apisurface

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"testing"
)

// aliasDeps are the packages the cases of TestAliases import: one under
// internal/ and one public, which has an alias of its own.
var aliasDeps = []struct{ path, src string }{
	{"example.com/m/internal/impl", `package impl
type Config struct {
	A int
	b int
	C string
}
func (Config) M() {}
func (*Config) P(int) error { return nil }
func (Config) hidden() {}
type Iface interface {
	Do() error
	undo()
}
type Inner = Config
`},
	{"example.com/m/pub", `package pub
import "example.com/m/internal/impl"
type Config struct{ X int }
func (Config) N() {}
type Alias = impl.Config
`},
}

// mapImporter imports the packages it holds.
type mapImporter map[string]*types.Package

func (m mapImporter) Import(path string) (*types.Package, error) {
	if p, ok := m[path]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("no package %s", path)
}

// checkSource type-checks src as the package at path.
func checkSource(t *testing.T, fset *token.FileSet, imp mapImporter, path, src string) *types.Package {
	t.Helper()
	f, err := parser.ParseFile(fset, path+"/x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: imp}
	p, err := conf.Check(path, fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	imp[path] = p
	return p
}

// TestAliases: an alias of a type declared under internal/ counts and
// lists its target's exported methods and fields, in the aliasing package,
// under its own name, through aliases users cannot see; an alias of a
// public type (or of an exported alias) counts once, as a top-level name.
func TestAliases(t *testing.T) {
	const internalLines = `
pkg p, method (*Config) P(int) error
pkg p, method (Config) M()
pkg p, type Config struct, A int
pkg p, type Config struct, C string`
	cases := []struct {
		name    string
		src     string
		count   Exported
		configs []ConfigStruct
		lines   string
	}{{
		name:    "alias of an internal struct",
		src:     `type Config = impl.Config`,
		count:   Exported{TopLevel: 1, Methods: 2, Fields: 2},
		configs: []ConfigStruct{{Name: "p.Config", Fields: 2}},
		lines:   "pkg p, type Config = impl.Config" + internalLines,
	}, {
		name:  "alias of an internal interface",
		src:   `type I = impl.Iface`,
		count: Exported{TopLevel: 1, Methods: 1},
		lines: `
pkg p, type I = impl.Iface
pkg p, type I interface, Do() error`,
	}, {
		name:  "alias of a public type",
		src:   `type Config = pub.Config`,
		count: Exported{TopLevel: 1},
		lines: `pkg p, type Config = pub.Config`,
	}, {
		name:  "alias of a public alias of an internal type",
		src:   `type Config = pub.Alias`,
		count: Exported{TopLevel: 1},
		lines: `pkg p, type Config = impl.Config`,
	}, {
		name:    "alias of an internal alias",
		src:     `type Config = impl.Inner`,
		count:   Exported{TopLevel: 1, Methods: 2, Fields: 2},
		configs: []ConfigStruct{{Name: "p.Config", Fields: 2}},
		lines:   "pkg p, type Config = impl.Config" + internalLines,
	}, {
		name:    "alias of an unexported alias",
		src:     "type config = impl.Config\ntype Config = config",
		count:   Exported{TopLevel: 1, Methods: 2, Fields: 2},
		configs: []ConfigStruct{{Name: "p.Config", Fields: 2}},
		lines:   "pkg p, type Config = impl.Config" + internalLines,
	}, {
		name:    "alias of an exported alias of the same package",
		src:     "type Config = impl.Config\ntype Options = Config",
		count:   Exported{TopLevel: 2, Methods: 2, Fields: 2},
		configs: []ConfigStruct{{Name: "p.Config", Fields: 2}},
		lines:   "pkg p, type Config = impl.Config\npkg p, type Options = impl.Config" + internalLines,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fset := token.NewFileSet()
			imp := mapImporter{}
			for _, d := range aliasDeps {
				checkSource(t, fset, imp, d.path, d.src)
			}
			src := "package p\nimport (\n\t\"example.com/m/internal/impl\"\n\t\"example.com/m/pub\"\n)\n" +
				"var _ impl.Config\nvar _ pub.Config\n" + c.src + "\n"
			p := Package{Rel: "p", Types: checkSource(t, fset, imp, "example.com/m/p", src)}
			if got := CountExported(p); got != c.count {
				t.Errorf("CountExported = %+v, want %+v", got, c.count)
			}
			if got := ConfigStructs(p); !slices.Equal(got, c.configs) {
				t.Errorf("ConfigStructs = %v, want %v", got, c.configs)
			}
			want := strings.Split(strings.TrimSpace(c.lines), "\n")
			slices.Sort(want)
			if got := Lines(p); !slices.Equal(got, want) {
				t.Errorf("Lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
