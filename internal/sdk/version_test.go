package sdk_test

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/internal/testflows"
	"github.com/skeinflow/skein/localworld"
)

// TestVersionsDeploy deploys v1 of a workflow on the local world, suspends
// runs at a hook and at a sleep, and switches to v2 (a step added and one
// removed): without patches the runs are held with the divergence shown
// and switching back resumes them; with patches they complete; and with
// executors pinned to their versions, v1 and an incompatible v2 run side by
// side, and a run of a version no one runs waits for its executor (see
// testflows.VersionScenarios).
func TestVersionsDeploy(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	testflows.VersionScenarios(t, func(t *testing.T, d testflows.Deployment) (*sdk.Client, func()) {
		t.Helper()
		w, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Registry: d.Registry,
			Version: d.Version, Versions: d.Versions, Logger: d.Logger, Engine: d.Engine}, append(d.Knobs, knobs.WithPollWait(20*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		return w.Client(), func() { cancel(); <-done }
	}, time.Second)
}

func TestDefaultVersionFromBuildInfo(t *testing.T) {
	t.Parallel()
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	const rev = "3f2a9c1d0b7e55aa90c1d2e3f4a5b6c7d8e9f001"
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil, ""},
		{"a VCS revision", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("vcs.revision", rev, "vcs.modified", "false")}, "3f2a9c1d0b7e"},
		{"a modified tree", &debug.BuildInfo{Settings: vcs("vcs.revision", rev, "vcs.modified", "true")}, "3f2a9c1d0b7e+dirty"},
		{"a module version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"a development build", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, ""},
		{"a short revision", &debug.BuildInfo{Settings: vcs("vcs.revision", "abc")}, "abc"},
	} {
		if got := sdk.VersionFromBuild(c.info); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestVersionConfig: a version that is not text, or too long, is refused
// by name; an empty Versions runs every version; a Client records its
// version on the runs it starts (RunInfo.Version).
func TestVersionConfig(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	reg := sdk.NewRegistry()
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"client", func() error {
			_, err := sdk.NewClient(sdk.ClientConfig{World: lw, Version: "v1\n"})
			return err
		}(), "client: Config.Version"},
		{"worker", func() error {
			_, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Registry: reg, Version: strings.Repeat("v", 200)})
			return err
		}(), "worker: Config.Version"},
		{"versions", func() error {
			_, err := sdk.NewProcessor(sdk.WorkerConfig{World: lw, Registry: reg, Versions: sdk.Versions{"v1", "v\x1b"}})
			return err
		}(), "worker: Config.Versions"},
		// Pinned to versions that leave out its own: the runs it starts
		// (schedules, children) would wait forever.
		{"own version refused", func() error {
			_, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Registry: reg, Version: "v2", Versions: sdk.Versions{"v1"}})
			return err
		}(), `own version "v2"`},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.name, c.err, c.want)
		}
	}
	if _, err := sdk.NewProcessor(sdk.WorkerConfig{World: lw, Registry: reg, Versions: sdk.Versions{}}); err != nil {
		t.Errorf("an empty Versions: %v", err)
	}
	if !(sdk.Versions{"v1", ""}).Accepts("") || (sdk.Versions{"v1"}).Accepts("v2") {
		t.Error("Versions accepts the wrong versions")
	}
	c, err := sdk.NewClient(sdk.ClientConfig{World: lw, Version: "release-7"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Start(context.Background(), "anything", 1)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := c.GetRun(context.Background(), id); err != nil || info.Version != "release-7" {
		t.Fatalf("run started by a client of release-7: %+v, %v", info, err)
	}
	for _, v := range []string{"release-6", ""} {
		id, err = c.Start(context.Background(), "anything", 1, sdk.WithVersion(v))
		if err != nil {
			t.Fatal(err)
		}
		if info, err := c.GetRun(context.Background(), id); err != nil || info.Version != v {
			t.Fatalf("run started WithVersion(%q): %+v, %v", v, info, err)
		}
	}
	if _, err := c.Start(context.Background(), "anything", 1, sdk.WithVersion("v\x00")); err == nil || !strings.Contains(err.Error(), "WithVersion") {
		t.Fatalf("WithVersion of a control character: %v, want an error naming WithVersion", err)
	}
}

// TestChildRunVersion: a child run records the version of the executor
// that started it (the worker running its parent), not that of the client
// that started the parent.
func TestChildRunVersion(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	child := sdk.New("version-child", func(ctx sdk.Context, n int) (int, error) { return n + 1, nil })
	parent := sdk.New("version-parent", func(ctx sdk.Context, n int) (int, error) { return child.Call(ctx, n) })
	reg := sdk.NewRegistry().MustRegister(parent, child)
	w, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Registry: reg, Version: "worker-2"}, knobs.WithPollWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	c, err := sdk.NewClient(sdk.ClientConfig{World: lw, Registry: reg, Version: "client-1"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := parent.Start(ctx, c, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || got != 2 {
		t.Fatalf("parent: %d, %v", got, err)
	}
	page, err := c.ListRuns(ctx, sdk.ListRunsOptions{WorkflowName: "version-child"})
	if err != nil || len(page.Runs) != 1 {
		t.Fatalf("child runs: %+v, %v", page, err)
	}
	if p, _ := c.GetRun(ctx, run.ID()); p.Version != "client-1" || page.Runs[0].Version != "worker-2" || page.Runs[0].ParentRunID != run.ID() {
		t.Fatalf("parent version %q, child %+v; want client-1 and worker-2", p.Version, page.Runs[0])
	}
}
