package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/skeinflow/skein"
)

// repoRoot is the Skein checkout the tests run in: a project's -replace.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestInitWritesAProject(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "orders")
	root := repoRoot(t)
	cli("init", "-replace", root, "-module", "example.com/acme/orders", "-region", "eu-west-1", "-tidy=false", dir).
		expect(t, 0, "wrote "+filepath.Join(dir, "template.yaml"), "go mod tidy", "make deploy")
	for _, c := range []struct {
		path string
		want []string
	}{
		{"go.mod", []string{"module example.com/acme/orders\n", "go " + goDirective + "\n",
			"require github.com/skeinflow/skein " + replacedVersion, "\ntool github.com/skeinflow/skein/cmd/skeinvet\n", "replace github.com/skeinflow/skein => " + root + "\n"}},
		{"workflows/workflows.go", []string{"package workflows", "func Registry() (*workflow.Registry, error)", `workflow.New("welcome"`}},
		{"workflows/workflows_test.go", []string{"func TestWelcome(t *testing.T)", "skeintest.New(t, registry(t)"}},
		{"cmd/lambda/main.go", []string{`"example.com/acme/orders/workflows"`, "skeinlambda.Start(reg)"}},
		{"template.yaml", []string{"CodeUri: cmd/lambda/", "orders: durable Go workflows", "the Skein checkout at " + root}},
		{"samconfig.toml", []string{"[default.deploy.parameters]", `stack_name = "orders"`, "[prod.deploy.parameters]",
			`stack_name = "orders-prod"`, `region = "eu-west-1"`, `s3_prefix = "orders-prod"`}},
		{"Makefile", []string{"\nbuild:\n", "\ntest: vet\n", "$(GO) tool skeinvet ./...", "\ndeploy: build\n", "--config-env $(ENV)", "GOARCH=arm64"}},
		{"README.md", []string{"# orders\n", "make deploy ENV=prod"}},
		{".gitignore", []string{".aws-sam/"}},
	} {
		b, err := os.ReadFile(filepath.Join(dir, c.path))
		if err != nil {
			t.Error(err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q:\n%s", c.path, w, b)
			}
		}
		if strings.Contains(string(b), "<no value>") || strings.Contains(string(b), "examples/lambda") {
			t.Errorf("%s has a template's leftovers:\n%s", c.path, b)
		}
	}
	// A project never overwrites one.
	cli("init", "-replace", root, "-tidy=false", dir).expect(t, 1, "is not empty")
}

func TestInitRefuses(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	tmp := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no directory", []string{"-replace", root}, "want 1 argument"},
		{"two directories", []string{"-replace", root, "a", "b"}, "want 1 argument"},
		{"a directory that cannot name a stack", []string{"-replace", root, filepath.Join(tmp, "my_app")}, "pass -name"},
		{"a bad name", []string{"-replace", root, "-name", "9lives", filepath.Join(tmp, "x")}, `-name "9lives"`},
		{"a bad module path", []string{"-replace", root, "-module", "has space", filepath.Join(tmp, "x")}, "not a module path"},
		{"a replace that is no checkout", []string{"-replace", tmp, filepath.Join(tmp, "x")}, "not a Skein checkout"},
		{"a bad version", []string{"-skein-version", "1.0", filepath.Join(tmp, "x")}, `-skein-version "1.0"`},
		{"a bad region", []string{"-replace", root, "-region", "mars-1", filepath.Join(tmp, "x")}, `-region "mars-1" is not an AWS region name`},
		// The test binary is built from a checkout, not a released module.
		{"no version to require", []string{filepath.Join(tmp, "x")}, "pass -skein-version, or -replace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cli(append([]string{"init", "-tidy=false"}, c.args...)...).expect(t, 2, c.want, "Usage: skein init")
		})
	}
	if _, err := os.Stat(filepath.Join(tmp, "x")); err == nil {
		t.Error("a refused init wrote its directory")
	}
}

func TestInitHelp(t *testing.T) {
	t.Parallel()
	cli("init", "-help").expect(t, 0, "Usage: skein init", "-replace", "Examples:")
	cli("help", "init").expect(t, 0, "Usage: skein init")
	cli("help").expect(t, 0, "init ")
}

// A released version is required as it is, with no replace.
func TestInitVersion(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "shop")
	cli("init", "-skein-version", "v0.4.0", "-tidy=false", dir).expect(t, 0)
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, "require github.com/skeinflow/skein v0.4.0\n") || strings.Contains(s, "replace") {
		t.Errorf("go.mod:\n%s", s)
	}
}

// The project's template is Skein's: every parameter, mapping, condition,
// resource (roles and policies, encryption, queues and their redrive
// policy, TTL, retention) and output is the same, but for the functions'
// CodeUri and the stack's description.
func TestProjectTemplateKeepsTheStack(t *testing.T) {
	t.Parallel()
	p := &project{Name: "orders", SkeinVersion: "v0.4.0"}
	gen, err := projectTemplate(skein.Template(), p)
	if err != nil {
		t.Fatal(err)
	}
	want, got := templateTree(t, skein.Template()), templateTree(t, gen)
	var uris int
	for path, v := range got {
		if strings.HasSuffix(path, "/Properties/CodeUri") {
			uris++
			if v != lambdaDir+"/" {
				t.Errorf("%s = %q, want %q", path, v, lambdaDir+"/")
			}
			got[path] = want[path]
		}
	}
	if uris != 3 {
		t.Errorf("%d functions' CodeUri, want 3 (flow, webhook, API)", uris)
	}
	if !strings.HasPrefix(got["/Description"], "orders: ") {
		t.Errorf("Description %q is not the project's", got["/Description"])
	}
	delete(got, "/Description")
	delete(want, "/Description")
	for path, v := range want {
		if g, ok := got[path]; !ok || g != v {
			t.Errorf("%s: project has %q, Skein %q", path, g, v)
		}
	}
	for path, v := range got {
		if _, ok := want[path]; !ok {
			t.Errorf("%s: project adds %q", path, v)
		}
	}
}

// templateTree flattens a CloudFormation template to its scalars by path
// (tags such as !Ref and !GetAtt included).
func templateTree(t *testing.T, text string) map[string]string {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		tag := ""
		if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
			tag = n.Tag + " "
		}
		switch n.Kind {
		case yaml.DocumentNode:
			walk(n.Content[0], path)
		case yaml.MappingNode:
			out[path+"/"] = tag + "{}"
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], path+"/"+n.Content[i].Value)
			}
		case yaml.SequenceNode:
			out[path+"/"] = fmt.Sprintf("%s[%d]", tag, len(n.Content))
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s/%d", path, i))
			}
		default:
			out[path] = tag + n.Value
		}
	}
	walk(&doc, "")
	return out
}

// Each edit of the root template must find what it edits.
func TestProjectTemplateRefusesADriftedRoot(t *testing.T) {
	t.Parallel()
	root := skein.Template()
	for _, c := range []struct{ name, old, new string }{
		{"no description", "Description: >-\n  Skein", "Description: Skein\n  #"},
		{"no harness comment", "# This template is also the source of truth for the offline test harness", "# A comment"},
		{"another bootstrap", "CodeUri: " + skeinLambdaDir + "/", "CodeUri: cmd/other/"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(root, c.old) {
				t.Fatalf("template.yaml lacks %q", c.old)
			}
			if _, err := projectTemplate(strings.ReplaceAll(root, c.old, c.new), &project{Name: "x"}); err == nil {
				t.Error("projectTemplate accepted it")
			}
		})
	}
}

// A project asks for the Go Skein itself needs.
func TestGoDirective(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join(repoRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go "); ok {
			if v != goDirective {
				t.Errorf("go.mod says go %s, goDirective %s", v, goDirective)
			}
			return
		}
	}
	t.Error("no go line in go.mod")
}

// TestProjectMakeValidate: the generated project's make validate uses sam
// when it is installed, falls back to cfn-lint when only that is, and says
// what to install when neither is.
func TestProjectMakeValidate(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := filepath.Join(t.TempDir(), "orders")
	cli("init", "-replace", repoRoot(t), "-tidy=false", dir).expect(t, 0)
	fake := func(t *testing.T, names ...string) string {
		bin := t.TempDir()
		for _, n := range names {
			script := "#!/bin/sh\necho " + n + " ran: \"$@\"\n"
			if err := os.WriteFile(filepath.Join(bin, n), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return bin
	}
	for _, c := range []struct {
		name  string
		tools []string
		fails bool
		want  []string
	}{
		{"sam", []string{"sam", "cfn-lint"}, false, []string{"sam ran: validate --lint --config-env default"}},
		{"cfn-lint only", []string{"cfn-lint"}, false, []string{"sam not found", "cfn-lint ran: template.yaml"}},
		{"neither", nil, true, []string{"make validate needs the AWS SAM CLI", "cfn-lint (pip install cfn-lint)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(mustLook(t, "make"), "validate")
			cmd.Dir = dir
			// make runs recipes with /bin/sh; PATH holds only the fakes.
			cmd.Env = append(os.Environ(), "PATH="+fake(t, c.tools...))
			out, err := cmd.CombinedOutput()
			if (err != nil) != c.fails {
				t.Fatalf("make validate: %v\n%s", err, out)
			}
			for _, w := range c.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(string(out), "No such file or directory") {
				t.Errorf("make failed on a missing tool:\n%s", out)
			}
		})
	}
}

func mustLook(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skip("no " + name)
	}
	return p
}

// TestVersionCommand: skein version prints the build's version.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	r := cli("version")
	r.expect(t, 0, "skein ", "(go1.")
	cli("version", "extra").expect(t, 2, "takes no arguments")
	cli("help").expect(t, 0, "version")
}
