package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
)

const initUsage = "[-module path] [-name name] [-region region] [-replace dir] [-skein-version v] [-tidy=false] <dir>"

const initHelp = `Writes a new Skein project into <dir> (new or empty): a Go module with one
workflow and its test on the local world (workflows/), a Lambda main that serves
them with skeinlambda.Start (cmd/lambda/), the AWS SAM template of the stack
(template.yaml, the same resources, policies and settings as Skein's own),
samconfig.toml with a "default" and a "prod" environment, a Makefile (build,
test, validate, deploy) and a README. Then it runs "go mod tidy" there.

The project requires the Skein this command was built from; -skein-version
names another, and -replace points the module at a local checkout of Skein
instead (before Skein is published, or to try a change).

Examples:
  skein init orders
  skein init -module github.com/acme/orders -name orders-service ./orders
  skein init -replace ~/src/skein -module example.com/orders orders`

// nameRE is a project name: a CloudFormation stack name short enough for
// the "-prod" suffix, and an S3 key prefix.
var nameRE = regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]{0,62}$`)

// modulePathRE is a plausible module path: slash-separated elements of
// letters, digits and ._~- (go mod tidy checks the rest).
var modulePathRE = regexp.MustCompile(`^[a-zA-Z0-9._~-]+(/[a-zA-Z0-9._~-]+)*$`)

// versionRE is a module version go can fetch: semantic, without build
// metadata (a binary built from a modified checkout says "+dirty").
var versionRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// regionRE is the shape of an AWS region name: a partition's two-letter
// prefix (with -gov or -iso* for those partitions), a direction or area,
// and a number: us-east-1, ap-southeast-2, us-gov-west-1.
var regionRE = regexp.MustCompile(`^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]{1,2}$`)

// initCmd runs "skein init": it returns the exit code.
func initCmd(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("skein init", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	module := fs.String("module", "", "the project's Go module `path` (default: the name)")
	name := fs.String("name", "", "the project's `name`: its stack is <name> (and <name>-prod), its S3 artifacts' prefix <name> (default: dir's base name)")
	region := fs.String("region", "us-east-1", "the AWS `region` samconfig.toml deploys to")
	replace := fs.String("replace", "", "a local Skein checkout: go.mod replaces the Skein module with `dir`")
	version := fs.String("skein-version", "", "the Skein `version` to require (default: this skein's own)")
	tidy := fs.Bool("tidy", true, `run "go mod tidy" in the new project (it fetches the modules it needs)`)
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: skein init %s\n\n%s\n\nFlags:\n", initUsage, initHelp)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	pos, err := parseInterspersed(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage(e.stdout)
		return 0
	case err == nil && len(pos) != 1:
		err = fmt.Errorf("want 1 argument (<dir>), got %d", len(pos))
	}
	var p *project
	if err == nil {
		p, err = newProject(pos[0], *module, *name, *region, *replace, *version)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "skein init: %v\n\n", err)
		usage(e.stderr)
		return 2
	}
	if err := initProject(ctx, e, p, pos[0], *tidy); err != nil {
		fmt.Fprintf(e.stderr, "skein init: %v\n", err)
		return 1
	}
	return 0
}

// newProject checks init's arguments and fills in their defaults.
func newProject(dir, module, name, region, replace, version string) (*project, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = filepath.Base(abs)
		if !nameRE.MatchString(name) {
			return nil, fmt.Errorf("%q cannot name a stack (a letter, then letters, digits and -): pass -name", name)
		}
	}
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("-name %q: want a letter, then up to 62 letters, digits and -", name)
	}
	if !regionRE.MatchString(region) {
		return nil, fmt.Errorf("-region %q is not an AWS region name (such as us-east-1 or eu-west-2)", region)
	}
	if module == "" {
		module = name
	}
	if !modulePathRE.MatchString(module) {
		return nil, fmt.Errorf("-module %q is not a module path (such as github.com/you/%s)", module, name)
	}
	if replace != "" {
		if replace, err = filepath.Abs(replace); err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(replace, "go.mod")); err != nil {
			return nil, fmt.Errorf("-replace %s: not a Skein checkout (no go.mod)", replace)
		}
	}
	switch {
	case version != "" && !versionRE.MatchString(version):
		return nil, fmt.Errorf("-skein-version %q: want a version such as v0.4.0", version)
	case version == "" && replace != "":
		version = replacedVersion
	case version == "":
		if version = ownVersion(); version == "" {
			return nil, errors.New("this skein was built from a checkout, not a released module, so it does not know which Skein to require: pass -skein-version, or -replace with a local checkout")
		}
	}
	return &project{Module: module, Name: name, Region: region, SkeinVersion: version, Replace: replace, GoVersion: goDirective}, nil
}

// ownVersion is the version of the Skein module this binary was built
// from, when it is one go can fetch ("" otherwise).
func ownVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Path != skeinModule || !versionRE.MatchString(bi.Main.Version) {
		return ""
	}
	return bi.Main.Version
}

// initProject writes p into dir, runs go mod tidy there if asked, and says
// what to do next.
func initProject(ctx context.Context, e *env, p *project, dir string, tidy bool) error {
	written, err := p.write(dir)
	if err != nil {
		return err
	}
	for _, f := range written {
		fmt.Fprintf(e.stdout, "wrote %s\n", filepath.Join(dir, filepath.FromSlash(f)))
	}
	if tidy {
		cmd := exec.CommandContext(ctx, "go", "mod", "tidy")
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, e.stderr, e.stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go mod tidy in %s: %w (the files are written; fix the cause and run it again)", dir, err)
		}
		fmt.Fprintf(e.stdout, "ran go mod tidy\n")
	}
	next := []string{"cd " + dir}
	if !tidy {
		next = append(next, "go mod tidy")
	}
	next = append(next, "make test", "make deploy")
	fmt.Fprintf(e.stdout, "\nNext:\n  %s\n", strings.Join(next, "\n  "))
	return nil
}
