package handler

import (
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	apidoc "github.com/skeinflow/skein/docs/api"
)

// The OpenAPI document describes exactly the routes the API serves.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(apidoc.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	var documented, served []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, rt := range (&api{}).table() {
		served = append(served, rt.method+" "+rt.pattern)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("documented:\n\t%s\nserved:\n\t%s", strings.Join(documented, "\n\t"), strings.Join(served, "\n\t"))
	}
}
