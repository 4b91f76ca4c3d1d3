package apisurface

import (
	"go/types"
	"iter"
	"slices"
	"strings"
)

// Exported counts a package's exported identifiers, as a user reading its
// documentation meets them.
type Exported struct {
	TopLevel int // exported constants, variables, functions and types
	Methods  int // exported methods declared on exported types (promoted ones not again), interfaces' included
	Fields   int // exported fields of exported struct types
}

// exported yields p's exported package-level objects, sorted by name.
func exported(p *types.Package) iter.Seq[types.Object] {
	return func(yield func(types.Object) bool) {
		scope := p.Scope()
		for _, name := range scope.Names() {
			if obj := scope.Lookup(name); obj.Exported() && !yield(obj) {
				return
			}
		}
	}
}

// CountExported counts p's exported identifiers. An alias counts once,
// as a top-level name; an alias of a type declared under internal/ also
// counts that type's exported methods and fields (see internalTarget),
// which users meet only through it.
func CountExported(p Package) Exported {
	var e Exported
	for obj := range exported(p.Types) {
		e.TopLevel++
		tn, ok := obj.(*types.TypeName)
		if !ok {
			continue
		}
		if named := shownType(tn); named != nil {
			methods, fields := members(named)
			e.Methods += methods
			e.Fields += fields
		}
	}
	return e
}

// shownType returns the named type whose exported methods and fields
// count, and are listed, under tn: the type tn declares, or, for an alias,
// its internal target; nil if there is none (an alias of a public type
// counts them where that type is declared).
func shownType(tn *types.TypeName) *types.Named {
	if tn.IsAlias() {
		a, ok := tn.Type().(*types.Alias)
		if !ok {
			return nil
		}
		return internalTarget(a)
	}
	named, _ := tn.Type().(*types.Named)
	return named
}

// internalTarget returns the type declared under internal/ that the alias
// a stands for, following the aliases users cannot see (unexported ones,
// or those declared under internal/), or nil if a stands for a public type,
// an exported alias of another package or of its own (counted where it is
// declared), or a type that is not named.
func internalTarget(a *types.Alias) *types.Named {
	for {
		switch rhs := a.Rhs().(type) {
		case *types.Alias:
			if obj := rhs.Obj(); obj.Exported() && !internal(obj.Pkg()) {
				return nil
			}
			a = rhs
		case *types.Named:
			if internal(rhs.Obj().Pkg()) {
				return rhs
			}
			return nil
		default:
			return nil
		}
	}
}

// internal reports whether p's import path has an internal/ element.
func internal(p *types.Package) bool {
	return p != nil && slices.Contains(strings.Split(p.Path(), "/"), "internal")
}

// members counts named's exported methods (an interface's explicit ones
// too) and, for a struct, its exported fields.
func members(named *types.Named) (methods, fields int) {
	for m := range named.Methods() {
		if m.Exported() {
			methods++
		}
	}
	switch u := named.Underlying().(type) {
	case *types.Struct:
		for f := range u.Fields() {
			if f.Exported() {
				fields++
			}
		}
	case *types.Interface:
		for i := range u.NumExplicitMethods() {
			if u.ExplicitMethod(i).Exported() {
				methods++
			}
		}
	}
	return methods, fields
}

// ConfigStruct is an exported struct type whose name ends in Config or
// Options (or Option), and its number of exported fields.
type ConfigStruct struct {
	Name   string // package-relative path and type name: "client.Config"
	Fields int
}

// ConfigStructs returns p's exported Config and Options structs, aliases
// of structs declared under internal/ included (by the alias's name).
func ConfigStructs(p Package) []ConfigStruct {
	var out []ConfigStruct
	for obj := range exported(p.Types) {
		name := obj.Name()
		tn, ok := obj.(*types.TypeName)
		if !ok || !(strings.HasSuffix(name, "Config") || strings.HasSuffix(name, "Options") || strings.HasSuffix(name, "Option")) {
			continue
		}
		named := shownType(tn)
		if named == nil {
			continue
		}
		st, ok := named.Underlying().(*types.Struct)
		if !ok {
			continue
		}
		c := ConfigStruct{Name: p.Rel + "." + name}
		for f := range st.Fields() {
			if f.Exported() {
				c.Fields++
			}
		}
		out = append(out, c)
	}
	return out
}

// errorInterface is the predeclared error interface.
func errorInterface() *types.Interface {
	return types.Universe.Lookup("error").Type().Underlying().(*types.Interface)
}

// Errors returns p's exported error types (named types that are not
// interfaces, of which T or *T implements error) and its sentinels
// (exported package variables whose type implements error).
func Errors(p Package) (errTypes, sentinels []string) {
	errorType := errorInterface()
	for obj := range exported(p.Types) {
		name := obj.Name()
		switch obj := obj.(type) {
		case *types.TypeName:
			t := obj.Type()
			if types.IsInterface(t) {
				continue
			}
			if types.Implements(t, errorType) || types.Implements(types.NewPointer(t), errorType) {
				errTypes = append(errTypes, p.Rel+"."+name)
			}
		case *types.Var:
			if types.Implements(obj.Type(), errorType) {
				sentinels = append(sentinels, p.Rel+"."+name)
			}
		}
	}
	return errTypes, sentinels
}
