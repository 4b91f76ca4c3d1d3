package apisurface

import (
	"go/types"
	"iter"
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

// CountExported counts p's exported identifiers.
func CountExported(p Package) Exported {
	var e Exported
	for obj := range exported(p.Types) {
		e.TopLevel++
		tn, ok := obj.(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		for m := range named.Methods() {
			if m.Exported() {
				e.Methods++
			}
		}
		switch u := named.Underlying().(type) {
		case *types.Struct:
			for f := range u.Fields() {
				if f.Exported() {
					e.Fields++
				}
			}
		case *types.Interface:
			for i := range u.NumExplicitMethods() {
				if u.ExplicitMethod(i).Exported() {
					e.Methods++
				}
			}
		}
	}
	return e
}

// ConfigStruct is an exported struct type whose name ends in Config or
// Options (or Option), and its number of exported fields.
type ConfigStruct struct {
	Name   string // package-relative path and type name: "workflow.ClientConfig"
	Fields int
}

// ConfigStructs returns p's exported Config and Options structs.
func ConfigStructs(p Package) []ConfigStruct {
	var out []ConfigStruct
	for obj := range exported(p.Types) {
		name := obj.Name()
		tn, ok := obj.(*types.TypeName)
		if !ok || tn.IsAlias() ||
			!(strings.HasSuffix(name, "Config") || strings.HasSuffix(name, "Options") || strings.HasSuffix(name, "Option")) {
			continue
		}
		st, ok := tn.Type().Underlying().(*types.Struct)
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
