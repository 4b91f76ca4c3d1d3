package skein_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/apisurface"
)

// snippetDocs are the Markdown files whose Go snippets TestDocSnippets
// compiles.
func snippetDocs(t *testing.T) []string {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	top, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append(top, docs...)
}

// snippetImports maps the package names snippets use, unqualified, to the
// packages they stand for: a snippet has no import block, and every one
// of these whose name it uses is imported (the unused ones are no error).
func snippetImports() map[string]string {
	m := map[string]string{
		"aws":    "github.com/aws/aws-sdk-go-v2/aws",
		"config": "github.com/aws/aws-sdk-go-v2/config",
		"v4":     "github.com/aws/aws-sdk-go-v2/aws/signer/v4",
		"http":   "net/http",
		"signal": "os/signal",
		"sha256": "crypto/sha256",
		"hex":    "encoding/hex",
		"json":   "encoding/json",
		"slog":   "log/slog",
	}
	for _, std := range []string{"bytes", "context", "errors", "fmt", "io", "log", "os", "strings", "syscall", "testing", "time"} {
		m[std] = std
	}
	for _, p := range []string{"workflow", "client", "worker", "world", "localworld", "dynamoworld", "skeintest", "skeinlambda",
		"skeinhttp", "handler", "encrypt", "encrypt/kmskeys", "webui", "schedule", "world/worldtest"} {
		m[filepath.Base(p)] = module + "/" + p
	}
	return m
}

// snippet is one ```go block of a Markdown file, with the hidden context
// the comment before it gives (see TestDocSnippets).
type snippet struct {
	file    string
	line    int // of the block's first line of code
	code    string
	context string
}

// contextMarker is the line of a context where the snippet goes.
const contextMarker = "SNIPPET"

// TestDocSnippets compiles (type-checks against the module) every Go
// snippet of the README and the other Markdown files (```go blocks), so
// that the documentation cannot name what the code no longer has. A
// snippet is a fragment: the test adds the imports it uses (snippetImports),
// and what it does not declare comes from an HTML comment just above the
// block, invisible on the rendered page:
//
//	<!-- go context
//	var client *client.Client
//	func _(ctx context.Context) error {
//		SNIPPET
//		return nil
//	}
//	-->
//
// The context is Go declarations; the snippet takes the place of the line
// SNIPPET, or, without one, follows the context as declarations of its
// own, or as the body of a function when it is statements. Unused
// variables and imports are no error. A block that is not Go takes another
// fence (```text).
func TestDocSnippets(t *testing.T) {
	t.Parallel()
	var snippets []snippet
	for _, doc := range snippetDocs(t) {
		snippets = append(snippets, readSnippets(t, doc)...)
	}
	if len(snippets) < 20 {
		t.Fatalf("found %d Go snippets in %v: want the README's and docs/'s (20 or more)", len(snippets), snippetDocs(t))
	}
	imports := snippetImports()
	paths := slices.Sorted(func(yield func(string) bool) {
		for _, p := range imports {
			if !yield(p) {
				return
			}
		}
	})
	fset := token.NewFileSet()
	imp, err := apisurface.ExportImporter(".", fset, paths...)
	if err != nil {
		t.Fatal(err)
	}
	// The check itself: a stale name fails, and a context supplies what a
	// fragment leaves out.
	stale := snippet{file: "self", line: 1, code: "workflow.RunStep(ctx)", context: "var ctx workflow.Context"}
	if errs := checkSnippet(fset, imp, imports, stale); len(errs) != 1 || !strings.Contains(errs[0], "self:1: undefined: workflow.RunStep") {
		t.Errorf("a snippet calling workflow.RunStep: errors %q, want one at self:1 naming it", errs)
	}
	good := snippet{file: "self", line: 1, code: "return wf.Call(ctx, in)",
		context: "var wf *workflow.Step[int, string]\nfunc _(ctx workflow.Context, in int) (string, error) {\n\tSNIPPET\n}"}
	if errs := checkSnippet(fset, imp, imports, good); len(errs) > 0 {
		t.Errorf("a snippet with its context: errors %q, want none", errs)
	}
	for _, s := range snippets {
		if errs := checkSnippet(fset, imp, imports, s); len(errs) > 0 {
			t.Errorf("%s:%d: the Go snippet does not compile (fix it, or give it the context it needs in a "+
				"<!-- go context --> comment above it, or a fence other than go if it is not Go):\n\t%s",
				s.file, s.line, strings.Join(errs, "\n\t"))
		}
	}
}

// contextBefore returns the context comment that ends the text before a
// block (nothing but blank lines between them), or "".
func contextBefore(before string) string {
	const open = "<!-- go context\n"
	i := strings.LastIndex(before, open)
	if i < 0 {
		return ""
	}
	body, after, ok := strings.Cut(before[i+len(open):], "-->")
	if !ok || strings.TrimSpace(after) != "" {
		return ""
	}
	return body
}

// readSnippets returns the ```go blocks of a Markdown file.
func readSnippets(t *testing.T, doc string) []snippet {
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []snippet
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		s := snippet{file: doc, line: i + 2}
		s.context = contextBefore(strings.Join(lines[:i], "\n"))
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		s.code = strings.Join(lines[i+1:end], "\n")
		out = append(out, s)
		i = end
	}
	return out
}

// checkSnippet type-checks a snippet and returns its errors, positioned
// in the Markdown file.
func checkSnippet(fset *token.FileSet, imp types.Importer, imports map[string]string, s snippet) []string {
	code := fmt.Sprintf("//line %s:%d\n%s\n//line %s (context):1\n", s.file, s.line, s.code, s.file)
	var src string
	switch {
	case strings.HasPrefix(strings.TrimSpace(s.code), "package "):
		src = code
	case strings.Contains(s.context, contextMarker):
		src = strings.Replace(s.context, contextMarker, "\n"+code, 1)
	case parses("package p\n" + s.code):
		src = s.context + "\n" + code
	default:
		src = s.context + "\nfunc _() {\n" + code + "}\n"
	}
	if !strings.HasPrefix(strings.TrimSpace(s.code), "package ") {
		var b strings.Builder
		b.WriteString("package snippet\n\n")
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for n := range imports {
				if !yield(n) {
					return
				}
			}
		}) {
			if regexp.MustCompile(`\b` + name + `\.`).MatchString(src) {
				fmt.Fprintf(&b, "import %s %q\n", name, imports[name])
			}
		}
		src = b.String() + "//line " + s.file + " (context):1\n" + src
	}
	f, err := parser.ParseFile(fset, "snippet.go", src, parser.SkipObjectResolution)
	if err != nil {
		return []string{err.Error()}
	}
	var errs []string
	conf := types.Config{Importer: imp, Error: func(err error) {
		if te, ok := err.(types.Error); !ok || !te.Soft {
			errs = append(errs, err.Error())
		}
	}}
	_, _ = conf.Check("snippet", fset, []*ast.File{f}, nil)
	return errs
}

// parses reports whether src is a Go file.
func parses(src string) bool {
	_, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	return err == nil
}
