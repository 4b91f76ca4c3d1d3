package sdk

import (
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/skeinflow/skein/world"
)

// Versions. Every run records the version of the code that started it
// (RunInfo.Version): client.Config.Version for the runs a Client starts,
// worker.Config.Version for the child runs
// its workflows start. Left empty, it is DefaultVersion (the build's VCS
// revision). A Worker or
// Processor given a VersionFilter executes only the runs whose version it
// accepts, and leaves the others, queued, for an executor that does (see
// the "Changing workflows" guide: pin and drain).

// DefaultVersion is the version a Client or Processor records when none is
// configured: the VCS revision the main module was built from (12
// characters, "+dirty" when the tree had uncommitted changes), else the
// main module's version when it has one (a binary installed from a module
// proxy), else "" (no version: a test binary, a build without VCS data).
func DefaultVersion() string {
	info, _ := debug.ReadBuildInfo()
	return versionFromBuild(info)
}

// versionFromBuild is DefaultVersion from build info (nil: none).
func versionFromBuild(info *debug.BuildInfo) string {
	if info == nil {
		return ""
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	v := ""
	switch {
	case rev != "":
		v = rev[:min(len(rev), 12)]
		if dirty {
			v += "+dirty"
		}
	case info.Main.Version != "" && info.Main.Version != "(devel)":
		v = info.Main.Version
	}
	if world.CheckVersion(v) != nil {
		return ""
	}
	return v
}

// VersionFilter says which runs' code versions an executor runs.
type VersionFilter interface {
	// Accepts reports whether runs of version (RunInfo.Version; "" for a
	// run that recorded none) may run here.
	Accepts(version string) bool
}

// Versions is a VersionFilter accepting the versions it lists (an empty
// list, as a nil filter, accepts every version). List ""
// too to run the runs that recorded no version (those started before
// versions were configured, or by a client built without VCS data).
type Versions []string

// Accepts reports whether version is in vs.
func (vs Versions) Accepts(version string) bool { return slices.Contains(vs, version) }

// resolveVersion returns the version a Client or Processor records: v, or
// DefaultVersion when v is empty; an error names field when v is invalid.
func resolveVersion(field, v string) (string, error) {
	if v == "" {
		return DefaultVersion(), nil
	}
	if err := world.CheckVersion(v); err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return v, nil
}

// acceptFunc returns the engine's AcceptVersion for f (nil: every run).
func acceptFunc(field string, f VersionFilter) (func(string) bool, error) {
	switch f := f.(type) {
	case nil:
		return nil, nil
	case Versions:
		if len(f) == 0 {
			return nil, nil
		}
		for _, v := range f {
			if err := world.CheckVersion(v); err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
		}
	}
	return f.Accepts, nil
}
