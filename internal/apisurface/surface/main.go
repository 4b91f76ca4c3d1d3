// Command surface prints, as Markdown, the size of the module's public
// surface (the table of docs/surface.md): exported identifiers per public
// package, exported Config/Options structs and their fields, the
// environment variables the code reads and where, and the exported error
// types and sentinels. Run it from the module's root:
//
//	go run ./internal/apisurface/surface
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/skeinflow/skein/internal/apisurface"
)

func main() {
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "surface:", err)
		os.Exit(1)
	}
	m, err := apisurface.Load(root, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "surface:", err)
		os.Exit(1)
	}
	env, err := m.EnvReads(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "surface:", err)
		os.Exit(1)
	}
	write(os.Stdout, m, env)
}

// harness reports whether a public package is the test harness of
// Skein's own stack (integration/), which the summary counts apart.
func harness(p apisurface.Package) bool {
	return p.Rel == "integration" || strings.HasPrefix(p.Rel, "integration/")
}

// tally is the summary's figures over a set of packages.
type tally struct {
	exported                  apisurface.Exported
	configs, configFields     int
	errTypes, sentinels       []string
	perPackage, configDetails []string
}

func count(m *apisurface.Module, keep func(apisurface.Package) bool) tally {
	var t tally
	for _, p := range m.Packages {
		if !p.Public || !keep(p) {
			continue
		}
		e := apisurface.CountExported(p)
		t.exported.TopLevel += e.TopLevel
		t.exported.Methods += e.Methods
		t.exported.Fields += e.Fields
		t.perPackage = append(t.perPackage, fmt.Sprintf("| %s | %d | %d | %d | %d | %d |",
			p.Rel, e.TopLevel+e.Methods, e.TopLevel, e.Methods, e.Fields, len(apisurface.Lines(p))))
		for _, c := range apisurface.ConfigStructs(p) {
			t.configs++
			t.configFields += c.Fields
			t.configDetails = append(t.configDetails, fmt.Sprintf("| %s | %d |", c.Name, c.Fields))
		}
		types, sentinels := apisurface.Errors(p)
		t.errTypes = append(t.errTypes, types...)
		t.sentinels = append(t.sentinels, sentinels...)
	}
	return t
}

func write(w io.Writer, m *apisurface.Module, env map[string][]string) {
	all := count(m, func(apisurface.Package) bool { return true })
	lib := count(m, func(p apisurface.Package) bool { return !harness(p) })
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range env {
			if !yield(k) {
				return
			}
		}
	})
	var own, several int
	for _, n := range names {
		if strings.HasPrefix(n, "SKEIN_") {
			own++
		}
		if len(env[n]) > 1 {
			several++
		}
	}
	fmt.Fprintln(w, "| measure | public packages | without integration/ |")
	fmt.Fprintln(w, "|---|---|---|")
	fmt.Fprintf(w, "| exported identifiers (top-level + methods) | %d | %d |\n",
		all.exported.TopLevel+all.exported.Methods, lib.exported.TopLevel+lib.exported.Methods)
	fmt.Fprintf(w, "| exported struct fields | %d | %d |\n", all.exported.Fields, lib.exported.Fields)
	fmt.Fprintf(w, "| exported Config/Options fields (structs) | %d (%d) | %d (%d) |\n",
		all.configFields, all.configs, lib.configFields, lib.configs)
	fmt.Fprintf(w, "| exported error types / sentinels | %d / %d | %d / %d |\n",
		len(all.errTypes), len(all.sentinels), len(lib.errTypes), len(lib.sentinels))
	fmt.Fprintf(w, "| environment variables read (SKEIN_*; read in more than one place) | %d (%d; %d) | |\n",
		len(names), own, several)
	fmt.Fprintln(w, "\n| package | identifiers | top-level | methods | fields | api.txt lines |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	fmt.Fprintln(w, strings.Join(all.perPackage, "\n"))
	fmt.Fprintln(w, "\n| Config/Options struct | exported fields |")
	fmt.Fprintln(w, "|---|---|")
	fmt.Fprintln(w, strings.Join(all.configDetails, "\n"))
	fmt.Fprintln(w, "\n| environment variable | places read | where |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, n := range names {
		fmt.Fprintf(w, "| %s | %d | %s |\n", n, len(env[n]), strings.Join(env[n], " "))
	}
	fmt.Fprintf(w, "\nError types (%d): %s\n", len(all.errTypes), strings.Join(all.errTypes, ", "))
	fmt.Fprintf(w, "\nSentinels (%d): %s\n", len(all.sentinels), strings.Join(all.sentinels, ", "))
}
