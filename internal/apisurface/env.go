package apisurface

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
)

// isEnvName reports whether s is the name of an environment variable Skein
// might read: capitals, digits and underscores, starting SKEIN_, AWS_ or
// OTEL_, or NO_COLOR.
func isEnvName(s string) bool {
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r == '_' || r >= '0' && r <= '9') {
			return false
		}
	}
	return s == "NO_COLOR" || strings.HasPrefix(s, "SKEIN_") || strings.HasPrefix(s, "AWS_") || strings.HasPrefix(s, "OTEL_")
}

// EnvReads finds where the module's non-test code reads environment
// variables: every call (os.Getenv, a getenv parameter, a parsing helper)
// whose first argument is a constant naming one (isEnvName), a literal
// "SKEIN_TABLE" or a constant such as envvars.Table. An argument that is
// a constant prefix and something else ("AWS_ENDPOINT_URL_" + service)
// counts as the prefix and "*". It returns each variable's read sites,
// "dir/file.go:line" relative to root, one per call.
func (m *Module) EnvReads(root string) (map[string][]string, error) {
	reads := map[string][]string{}
	for _, p := range m.Packages {
		if len(p.Files) == 0 {
			continue
		}
		files := make([]*ast.File, 0, len(p.Files))
		for _, name := range p.Files {
			f, err := parser.ParseFile(m.Fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, fmt.Errorf("apisurface: %w", err)
			}
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
		conf := types.Config{Importer: m.Importer}
		if _, err := conf.Check(p.Path, m.Fset, files, info); err != nil {
			return nil, fmt.Errorf("apisurface: type-checking %s: %w", p.Path, err)
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				if name := envArg(call.Args[0], info); name != "" {
					pos := m.Fset.Position(call.Pos())
					rel, err := filepath.Rel(root, pos.Filename)
					if err != nil {
						rel = pos.Filename
					}
					reads[name] = append(reads[name], fmt.Sprintf("%s:%d", filepath.ToSlash(rel), pos.Line))
				}
				return true
			})
		}
	}
	return reads, nil
}

// envArg returns the variable an argument names, or "".
func envArg(arg ast.Expr, info *types.Info) string {
	if tv, ok := info.Types[arg]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
		if s := constant.StringVal(tv.Value); isEnvName(s) {
			return s
		}
		return ""
	}
	if bin, ok := arg.(*ast.BinaryExpr); ok && bin.Op == token.ADD {
		if prefix := envArg(bin.X, info); prefix != "" {
			return prefix + "*"
		}
	}
	return ""
}
