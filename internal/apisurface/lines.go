package apisurface

import (
	"fmt"
	"go/constant"
	"go/types"
	"slices"
	"strings"
)

// Lines returns the exported API of p, one line per exported identifier,
// sorted, in the form of the Go distribution's api/ files:
//
//	pkg workflow, const Name Type = value
//	pkg workflow, var Name Type
//	pkg workflow, func Name(Param) Result
//	pkg workflow, type Name struct
//	pkg workflow, type Name struct, Field Type
//	pkg workflow, type Name struct, embedded Type
//	pkg workflow, type Name interface { M1, M2 }
//	pkg workflow, type Name interface, M1(Param) Result
//	pkg workflow, method (*Name) M(Param) Result
//
// Parameter names are left out (renaming one changes no caller); types of
// another package are qualified by its name. A struct's or interface's
// fields and methods are listed as declared (an embedded field by its
// type); a named type's methods are its whole method set, the promoted
// ones included.
func Lines(p Package) []string {
	var lines []string
	prefix := "pkg " + p.Rel + ", "
	add := func(format string, args ...any) { lines = append(lines, prefix+fmt.Sprintf(format, args...)) }
	q := qualifier(p.Types)
	for obj := range exported(p.Types) {
		name := obj.Name()
		switch obj := obj.(type) {
		case *types.Const:
			add("const %s %s = %s", name, typeString(obj.Type(), q), constString(obj.Val()))
		case *types.Var:
			add("var %s %s", name, typeString(obj.Type(), q))
		case *types.Func:
			sig := obj.Type().(*types.Signature)
			add("func %s%s%s", name, typeParams(sig.TypeParams(), q), sigString(sig, q))
		case *types.TypeName:
			typeLines(obj, q, add)
		}
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

// typeLines adds the lines of a type: its declaration, its fields or
// interface methods, and its methods. An alias of a type declared under
// internal/ (see internalTarget) lists, after its declaration, its
// target's fields and methods under its own name.
func typeLines(obj *types.TypeName, q types.Qualifier, add func(string, ...any)) {
	name := obj.Name()
	if obj.IsAlias() {
		add("type %s = %s", name, typeString(types.Unalias(obj.Type()), q))
		if a, ok := obj.Type().(*types.Alias); ok {
			if target := internalTarget(a); target != nil {
				memberLines(name, a.TypeParams(), target, false, q, add)
			}
		}
		return
	}
	named, ok := obj.Type().(*types.Named)
	if !ok {
		add("type %s %s", name, typeString(obj.Type().Underlying(), q))
		return
	}
	memberLines(name, named.TypeParams(), named, true, q, add)
}

// memberLines adds the lines of named's fields or interface methods, and
// its methods, under the name and type parameters of the type declaring
// them (named itself, or an alias of it); declare adds named's declaration.
func memberLines(name string, tps *types.TypeParamList, named *types.Named, declare bool,
	q types.Qualifier, add func(string, ...any)) {
	decl := name + typeParams(tps, q)
	switch u := named.Underlying().(type) {
	case *types.Struct:
		if declare {
			add("type %s struct", decl)
		}
		for f := range u.Fields() {
			switch {
			case f.Embedded():
				add("type %s struct, embedded %s", decl, typeString(f.Type(), q))
			case f.Exported():
				add("type %s struct, %s %s", decl, f.Name(), typeString(f.Type(), q))
			}
		}
	case *types.Interface:
		var names []string
		unexported := false
		for m := range u.Methods() {
			if !m.Exported() {
				unexported = true
				continue
			}
			names = append(names, m.Name())
			add("type %s interface, %s%s", decl, m.Name(), sigString(m.Type().(*types.Signature), q))
		}
		if unexported {
			names = append(names, "unexported methods")
		}
		switch {
		case !declare:
		case u.IsMethodSet():
			add("type %s interface { %s }", decl, strings.Join(names, ", "))
		default:
			add("type %s interface, constraint %s", decl, typeString(u, q))
		}
		return
	default:
		if declare {
			add("type %s %s", decl, typeString(u, q))
		}
	}
	methodLines(name, tps, named, q, add)
}

// methodLines adds the exported methods of named's method set (those of
// *T for a type that is not a pointer or interface), with name and tps as
// the receiver's.
func methodLines(name string, tps *types.TypeParamList, named *types.Named, q types.Qualifier, add func(string, ...any)) {
	recv := name
	if tps.Len() > 0 {
		args := make([]string, tps.Len())
		for i := range args {
			args[i] = tps.At(i).Obj().Name()
		}
		recv += "[" + strings.Join(args, ", ") + "]"
	}
	values := types.NewMethodSet(named)
	for m := range types.NewMethodSet(types.NewPointer(named)).Methods() {
		fn := m.Obj().(*types.Func)
		if !fn.Exported() {
			continue
		}
		r := "*" + recv
		if values.Lookup(fn.Pkg(), fn.Name()) != nil {
			r = recv
		}
		add("method (%s) %s%s", r, fn.Name(), sigString(m.Type().(*types.Signature), q))
	}
}

// qualifier names a package other than p by its name.
func qualifier(p *types.Package) types.Qualifier {
	return func(other *types.Package) string {
		if other == p {
			return ""
		}
		return other.Name()
	}
}

// constString is a constant's value as Go source would spell it.
func constString(v constant.Value) string {
	if v.Kind() == constant.String {
		return v.String() // quoted, shortened if long
	}
	return v.ExactString()
}

// typeParams is a type parameter list, "[K comparable, V any]", or "".
func typeParams(tps *types.TypeParamList, q types.Qualifier) string {
	if tps.Len() == 0 {
		return ""
	}
	parts := make([]string, tps.Len())
	for i := range parts {
		tp := tps.At(i)
		parts[i] = tp.Obj().Name() + " " + typeString(tp.Constraint(), q)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// sigString is a signature without "func" and without parameter names:
// "(string, ...int) (T, error)".
func sigString(sig *types.Signature, q types.Qualifier) string {
	params := tupleTypes(sig.Params(), sig.Variadic(), q)
	s := "(" + strings.Join(params, ", ") + ")"
	switch res := tupleTypes(sig.Results(), false, q); len(res) {
	case 0:
	case 1:
		s += " " + res[0]
	default:
		s += " (" + strings.Join(res, ", ") + ")"
	}
	return s
}

// tupleTypes returns the types of a tuple's elements; variadic spells the
// last as "...T".
func tupleTypes(t *types.Tuple, variadic bool, q types.Qualifier) []string {
	out := make([]string, t.Len())
	for i := range out {
		typ := t.At(i).Type()
		if variadic && i == len(out)-1 {
			out[i] = "..." + typeString(typ.(*types.Slice).Elem(), q)
			continue
		}
		out[i] = typeString(typ, q)
	}
	return out
}

// typeString spells a type as types.TypeString does but for signatures,
// at any depth, which lose their parameter names.
func typeString(t types.Type, q types.Qualifier) string {
	switch t := t.(type) {
	case *types.Signature:
		return "func" + sigString(t, q)
	case *types.Pointer:
		return "*" + typeString(t.Elem(), q)
	case *types.Slice:
		return "[]" + typeString(t.Elem(), q)
	case *types.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), typeString(t.Elem(), q))
	case *types.Map:
		return "map[" + typeString(t.Key(), q) + "]" + typeString(t.Elem(), q)
	case *types.Chan:
		prefix := map[types.ChanDir]string{types.SendRecv: "chan ", types.SendOnly: "chan<- ", types.RecvOnly: "<-chan "}[t.Dir()]
		return prefix + typeString(t.Elem(), q)
	case *types.Named:
		obj := t.Obj()
		s := obj.Name()
		if obj.Pkg() != nil {
			if p := q(obj.Pkg()); p != "" {
				s = p + "." + s
			}
		}
		if args := t.TypeArgs(); args.Len() > 0 {
			parts := make([]string, args.Len())
			for i := range parts {
				parts[i] = typeString(args.At(i), q)
			}
			s += "[" + strings.Join(parts, ", ") + "]"
		}
		return s
	default:
		return types.TypeString(t, q)
	}
}
