package main

import (
	"fmt"
	"runtime/debug"
)

// versionCmd runs "skein version": the module version this binary was built
// from and, when built from a checkout, its VCS revision. It returns the
// exit code.
func versionCmd(e *env, args []string) int {
	if len(args) > 0 {
		fmt.Fprintf(e.stderr, "skein version: takes no arguments, got %q\n", args)
		return 2
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(e.stdout, "skein (no build information)")
		return 0
	}
	fmt.Fprintln(e.stdout, versionLine(bi))
	return 0
}

// versionLine describes a build: "skein v0.4.0 (go1.24.1)", or for a
// checkout "skein (devel) revision 1a2b3c4d5e6f, modified, 2026-11-24T09:00:00Z (go1.24.1)".
func versionLine(bi *debug.BuildInfo) string {
	s := "skein " + bi.Main.Version
	var rev, at string
	modified := false
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.time":
			at = kv.Value
		case "vcs.modified":
			modified = kv.Value == "true"
		}
	}
	if rev != "" {
		s += " revision " + rev[:min(len(rev), 12)]
		if modified {
			s += ", modified"
		}
		if at != "" {
			s += ", " + at
		}
	}
	return s + " (" + bi.GoVersion + ")"
}
