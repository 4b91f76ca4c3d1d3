package main

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/skeinflow/skein"
)

// projectFiles are the templates of the files skein init writes (text/template,
// with a project as data). They end in .tmpl so that the Go tool does not
// take them for part of this package or for a module of their own.
//
//go:embed project/*.tmpl
var projectFiles embed.FS

const (
	// skeinModule is the module path a project requires.
	skeinModule = "github.com/skeinflow/skein"
	// goDirective is the go line of a project's go.mod: Skein's own
	// (TestGoDirective holds them equal).
	goDirective = "1.26.8"
	// replacedVersion is what a project requires when a replace directive
	// points Skein at a local checkout (the version is then unused).
	replacedVersion = "v0.0.0-00010101000000-000000000000"
	// lambdaDir is the project's bootstrap package, the functions' CodeUri.
	lambdaDir = "cmd/lambda"
	// skeinLambdaDir is the bootstrap of Skein's own stack, the CodeUri of
	// the root template.yaml.
	skeinLambdaDir = "examples/lambda"
)

// project is what skein init writes: the data of the file templates.
type project struct {
	Module       string // the project's module path
	Name         string // the project's name: the stack name and the artifacts' S3 prefix
	Region       string // the AWS region samconfig.toml deploys to
	SkeinVersion string // the version of Skein go.mod requires
	Replace      string // a local Skein checkout go.mod replaces the module with ("" for none)
	GoVersion    string
}

// projectFile is one file skein init writes: path is relative to the
// project's directory; tmpl names the template under project/, or is empty
// for template.yaml, which is derived from Skein's own (projectTemplate).
type projectFile struct{ path, tmpl string }

// projectLayout lists the files of a project, in the order they are written.
func projectLayout() []projectFile {
	return []projectFile{
		{"go.mod", "go.mod.tmpl"},
		{"workflows/workflows.go", "workflows.go.tmpl"},
		{"workflows/workflows_test.go", "workflows_test.go.tmpl"},
		{lambdaDir + "/main.go", "main.go.tmpl"},
		{"template.yaml", ""},
		{"samconfig.toml", "samconfig.toml.tmpl"},
		{"Makefile", "Makefile.tmpl"},
		{"README.md", "README.md.tmpl"},
		{".gitignore", "gitignore.tmpl"},
	}
}

// render returns the contents of every file of p, by path.
func (p *project) render() (map[string][]byte, error) {
	out := make(map[string][]byte)
	for _, f := range projectLayout() {
		if f.tmpl == "" {
			t, err := projectTemplate(skein.Template(), p)
			if err != nil {
				return nil, err
			}
			out[f.path] = []byte(t)
			continue
		}
		t, err := template.New(f.tmpl).Option("missingkey=error").ParseFS(projectFiles, "project/"+f.tmpl)
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, p); err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
		out[f.path] = b.Bytes()
	}
	return out, nil
}

// write renders p into dir, which must not exist or be empty: skein init
// never overwrites a file.
func (p *project) write(dir string) ([]string, error) {
	files, err := p.render()
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	case len(entries) > 0:
		return nil, fmt.Errorf("%s is not empty: skein init writes a new project into a new or empty directory", dir)
	}
	var written []string
	for _, f := range projectLayout() {
		path := filepath.Join(dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return written, err
		}
		if err := os.WriteFile(path, files[f.path], 0o644); err != nil {
			return written, err
		}
		written = append(written, f.path)
	}
	return written, nil
}

// projectTemplate derives a project's template.yaml from Skein's own
// (root): the same parameters, resources, policies and outputs, with the
// project's description and its bootstrap's directory as the functions'
// CodeUri. Each edit must find what it edits, so that a change to the root
// template that would silently defeat it fails instead.
func projectTemplate(root string, p *project) (string, error) {
	t := root
	// The description: the top-level Description and its folded lines.
	desc := regexp.MustCompile(`(?m)^Description: >-\n(  .*\n)+`)
	if len(desc.FindAllStringIndex(t, -1)) != 1 {
		return "", errors.New("template.yaml: no top-level folded Description to replace")
	}
	t = desc.ReplaceAllLiteralString(t, "Description: >-\n"+
		"  "+p.Name+": durable Go workflows on AWS Lambda with Skein. One flow function triggered by SQS (event log\n"+
		"  in DynamoDB, streams and large payloads in S3), a webhook function behind a public Function URL and an\n"+
		"  HTTP API function behind a Function URL with AWS_IAM auth. Deploy with `make deploy` (samconfig.toml).\n")
	// Skein's offline harness reads the root template; a project has none.
	harness := regexp.MustCompile(`(?m)^# This template is also the source of truth for the offline test harness[^\n]*\n(#[^\n]*\n)*\n`)
	if len(harness.FindAllStringIndex(t, -1)) != 1 {
		return "", errors.New("template.yaml: the comment on the offline test harness is not where it was")
	}
	t = harness.ReplaceAllLiteralString(t, "")
	if n := strings.Count(t, "CodeUri: "+skeinLambdaDir+"/"); n == 0 {
		return "", fmt.Errorf("template.yaml: no function with CodeUri %s/", skeinLambdaDir)
	}
	t = strings.ReplaceAll(t, skeinLambdaDir, lambdaDir)
	from := skeinModule + " " + p.SkeinVersion
	if p.Replace != "" {
		from = "the Skein checkout at " + p.Replace
	}
	header := "# The stack of " + p.Name + ", written by `skein init` from Skein's template (" + from + ").\n" +
		"# It is yours to change; Skein's own template.yaml shows what later versions change.\n"
	return header + t, nil
}
