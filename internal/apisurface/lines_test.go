package apisurface

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"testing"
)

const sample = `package p

import "io"

const C = 3
const S string = "s"
var V io.Reader
var ErrX = io.EOF
func F(name string, opts ...int) (n int, err error) { return 0, nil }
func G[T any](f func(ctx T) error) {}
type Alias = io.Writer
type I interface { io.Closer; M(int) string; hidden() }
type E struct{ error }
type T struct {
	A, b int
	*E
	Fn func(x int) (y bool)
}
func (T) Value() {}
func (*T) Ptr(m map[string][]byte) {}
func (T) unexported() {}
type L[K comparable, V any] []V
func (l L[K, V]) Len() int { return len(l) }
type hidden int
func (hidden) Exported() {}
`

func TestLines(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", sample, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	tp, err := conf.Check("example.com/p", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSpace(`
pkg p, const C untyped int = 3
pkg p, const S string = "s"
pkg p, func F(string, ...int) (int, error)
pkg p, func G[T any](func(T) error)
pkg p, method (*T) Ptr(map[string][]byte)
pkg p, method (E) Error() string
pkg p, method (L[K, V]) Len() int
pkg p, method (T) Error() string
pkg p, method (T) Value()
pkg p, type Alias = io.Writer
pkg p, type E struct
pkg p, type E struct, embedded error
pkg p, type I interface { Close, M, unexported methods }
pkg p, type I interface, Close() error
pkg p, type I interface, M(int) string
pkg p, type L[K comparable, V any] []V
pkg p, type T struct
pkg p, type T struct, A int
pkg p, type T struct, Fn func(int) bool
pkg p, type T struct, embedded *E
pkg p, var ErrX error
pkg p, var V io.Reader`), "\n")
	got := Lines(Package{Rel: "p", Types: tp})
	if !slices.Equal(got, want) {
		t.Errorf("Lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	e := CountExported(Package{Rel: "p", Types: tp})
	// C S V ErrX F G Alias I E T L; I's M (Close is embedded), T's Value and
	// Ptr, L's Len; T's A, Fn and E (embedded).
	if want := (Exported{TopLevel: 11, Methods: 4, Fields: 3}); e != want {
		t.Errorf("CountExported = %+v, want %+v", e, want)
	}
	types, sentinels := Errors(Package{Rel: "p", Types: tp})
	if !slices.Equal(types, []string{"p.E", "p.T"}) || !slices.Equal(sentinels, []string{"p.ErrX"}) {
		t.Errorf("Errors = %v, %v; want [p.E p.T], [p.ErrX]", types, sentinels)
	}
}
