// Package apisurface lists and counts the exported API of the module's
// public packages: every package but those under internal/, bench/ and
// examples/ and the commands (package main). The golden file api/api.txt
// and its test (api_test.go at the module's root) are made from Lines; the
// surface table of docs/surface.md is printed by its command,
// `go run ./internal/apisurface/surface`.
//
// It reads the packages' types from the compiler's export data, which
// `go list -export` writes, with the standard library alone (the module's
// rule: only the analyzer imports golang.org/x/tools).
package apisurface

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Package is one package of the module.
type Package struct {
	Path   string         // import path
	Rel    string         // path relative to the module's root; the root itself is the module's last element
	Dir    string         // directory
	Files  []string       // the non-test Go files of the build, absolute
	Public bool           // see Public
	Types  *types.Package // from export data; nil unless Public
}

// listed is the part of `go list -json` this package reads.
type listed struct {
	ImportPath string
	Name       string
	Dir        string
	Export     string
	GoFiles    []string
	Module     *struct{ Path string }
	Error      *struct{ Err string }
}

// Public reports whether the package at rel (relative to the module's root)
// with the given package name is public: not a command, and not under
// internal/, bench/ or examples/.
func Public(rel, name string) bool {
	if name == "main" {
		return false
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == "internal" || seg == "bench" || seg == "examples" || seg == "testdata" {
			return false
		}
	}
	return true
}

// Module is the module's packages and what reads their types.
type Module struct {
	Packages []Package // sorted by import path
	Fset     *token.FileSet
	Importer types.Importer // any package the module's packages import, from export data
}

// Load lists the module in dir (`go list ./...`) and returns its packages,
// the public ones with their types. It builds the export data of the
// public packages and their dependencies (`go list -export -deps`), or, when
// all is set, of every package of the module, so that Importer can
// type-check any of them.
func Load(dir string, all bool) (*Module, error) {
	listedPkgs, err := goList(dir, "-json=ImportPath,Name,Dir,GoFiles,Module,Error", "./...")
	if err != nil {
		return nil, err
	}
	var pkgs []Package
	var patterns []string
	for _, p := range listedPkgs {
		if p.Module == nil {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, p.Module.Path), "/")
		if rel == "" {
			rel = path.Base(p.Module.Path)
		}
		pkg := Package{Path: p.ImportPath, Rel: rel, Dir: p.Dir, Public: Public(rel, p.Name)}
		for _, f := range p.GoFiles {
			pkg.Files = append(pkg.Files, filepath.Join(p.Dir, f))
		}
		if all || pkg.Public {
			patterns = append(patterns, p.ImportPath)
		}
		pkgs = append(pkgs, pkg)
	}
	fset := token.NewFileSet()
	imp, err := ExportImporter(dir, fset, patterns...)
	if err != nil {
		return nil, err
	}
	for i, p := range pkgs {
		if p.Public {
			if pkgs[i].Types, err = imp.Import(p.Path); err != nil {
				return nil, fmt.Errorf("apisurface: %s: %w", p.Path, err)
			}
		}
	}
	slices.SortFunc(pkgs, func(a, b Package) int { return strings.Compare(a.Path, b.Path) })
	return &Module{Packages: pkgs, Fset: fset, Importer: imp}, nil
}

// ExportImporter returns an importer of the packages patterns name (in
// dir) and their dependencies, reading the export data `go list -export
// -deps` builds for them.
func ExportImporter(dir string, fset *token.FileSet, patterns ...string) (types.Importer, error) {
	deps, err := goList(dir, append([]string{"-export", "-deps", "-json=ImportPath,Export,Error"}, patterns...)...)
	if err != nil {
		return nil, err
	}
	exports := map[string]string{}
	for _, p := range deps {
		exports[p.ImportPath] = p.Export
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file := exports[path]
		if file == "" {
			return nil, fmt.Errorf("apisurface: no export data for %s", path)
		}
		return os.Open(file)
	}), nil
}

// goList runs `go list -e` with args in dir and decodes its packages; a
// package's error fails it.
func goList(dir string, args ...string) ([]listed, error) {
	cmd := exec.Command("go", append([]string{"list", "-e"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("apisurface: go list: %v: %s", err, stderr.Bytes())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("apisurface: go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("apisurface: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
}
