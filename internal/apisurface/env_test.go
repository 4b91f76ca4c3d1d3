package apisurface

import (
	"go/importer"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

const envSample = `package p

import "os"

const EnvTable = "SKEIN_TABLE"

func read(getenv func(string) string, service string) {
	get := func(k string) string { return getenv(k) }
	_ = os.Getenv("SKEIN_DB")
	_ = get(EnvTable)
	_ = getenv(EnvTable)
	_ = os.Getenv("AWS_ENDPOINT_URL_" + service)
	_, _ = os.LookupEnv("NO_COLOR")
	_ = os.Getenv("HOME")
	_ = get("GET")
}
`

func TestEnvReads(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.go")
	if err := os.WriteFile(file, []byte(envSample), 0o600); err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	m := &Module{
		Packages: []Package{{Path: "example.com/p", Rel: "p", Dir: dir, Files: []string{file}}},
		Fset:     fset,
		Importer: importer.ForCompiler(fset, "source", nil),
	}
	reads, err := m.EnvReads(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"SKEIN_DB":           {"p.go:9"},
		"SKEIN_TABLE":        {"p.go:10", "p.go:11"},
		"AWS_ENDPOINT_URL_*": {"p.go:12"},
		"NO_COLOR":           {"p.go:13"},
	}
	if len(reads) != len(want) {
		t.Errorf("EnvReads = %v, want %v", reads, want)
	}
	for name, sites := range want {
		if !slices.Equal(reads[name], sites) {
			t.Errorf("EnvReads[%s] = %v, want %v", name, reads[name], sites)
		}
	}
}
