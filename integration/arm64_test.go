//go:build integration

package integration

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/lambdaemu"
	"github.com/skeinflow/skein/world"
)

// The arm64 bootstrap is what template.yaml deploys (provided.al2023, arm64). On an amd64 machine
// these tests execute it under QEMU user-mode emulation, qemu-aarch64 named as the function's
// launcher (no binfmt_misc, no Docker): scripts/qemu.sh installs Debian's qemu-user-static, pinned,
// and `make emulator-test` passes its path in SKEIN_QEMU_AARCH64. Only the bootstrap is emulated;
// the emulators and the test run natively.

// emulatedTimeout is the flow function's timeout (and the queue's visibility timeout is a little
// longer): emulation runs the bootstrap's CPU work 5-20x slower than native, and the serial run
// must still finish in one invocation.
const emulatedTimeout = 3 * time.Minute

// arm64Bin is examples/lambda built for linux/arm64, once, next to the host bootstrap (TestMain
// removes that directory).
var arm64Bin struct {
	once sync.Once
	path string
	size int64
	took time.Duration
	err  error
}

func arm64Bootstrap(t *testing.T) string {
	t.Helper()
	host := bootstrap(t) // TestMain built it, and made the directory
	arm64Bin.once.Do(func() {
		dir := filepath.Join(filepath.Dir(host), "arm64")
		if arm64Bin.err = os.MkdirAll(dir, 0o755); arm64Bin.err != nil {
			return
		}
		start := time.Now()
		arm64Bin.path, arm64Bin.size, arm64Bin.err = buildLambda(dir, "bootstrap", "linux", "arm64", false)
		arm64Bin.took = time.Since(start)
		if arm64Bin.err != nil {
			return
		}
		f, err := elf.Open(arm64Bin.path)
		if err != nil {
			arm64Bin.err = err
			return
		}
		defer f.Close()
		if f.Machine != elf.EM_AARCH64 {
			arm64Bin.err = fmt.Errorf("%s is built for %s, not arm64", arm64Bin.path, f.Machine)
		}
	})
	if arm64Bin.err != nil {
		t.Fatalf("arm64 bootstrap: %v", arm64Bin.err)
	}
	return arm64Bin.path
}

// qemuLauncher returns the launcher for an arm64 bootstrap on this machine: none on an arm64 host;
// else SKEIN_QEMU_AARCH64, or qemu-aarch64(-static) in PATH, or (with SKEIN_REQUIRE_EMULATORS=1)
// the pinned copy scripts/qemu.sh installs. Without any it skips, or with
// SKEIN_REQUIRE_EMULATORS=1 fails.
func qemuLauncher(t *testing.T) []string {
	t.Helper()
	if runtime.GOARCH == "arm64" {
		t.Log("arm64 host: the arm64 bootstrap runs natively")
		return nil
	}
	if p := os.Getenv("SKEIN_QEMU_AARCH64"); p != "" {
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
			t.Fatalf("SKEIN_QEMU_AARCH64=%s is not an executable file (%v)", p, err)
		}
		return []string{p}
	}
	for _, name := range []string{"qemu-aarch64-static", "qemu-aarch64"} {
		if p, err := exec.LookPath(name); err == nil {
			return []string{p}
		}
	}
	const how = "bash scripts/qemu.sh install && export SKEIN_QEMU_AARCH64=$(bash scripts/qemu.sh path)"
	if os.Getenv("SKEIN_REQUIRE_EMULATORS") != "1" {
		t.Skip("needs qemu-aarch64 to execute the arm64 bootstrap: " + how)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", "../scripts/qemu.sh", "path")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("SKEIN_REQUIRE_EMULATORS=1 and qemu-aarch64 cannot be obtained (SKEIN_QEMU_AARCH64 unset, "+
			"none in PATH, scripts/qemu.sh path: %v):\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Log(strings.TrimSpace(stderr.String()))
	}
	return []string{strings.TrimSpace(stdout.String())}
}

// arm64Stack is a test stack whose flow function is the arm64 bootstrap behind the launcher.
func arm64Stack(t *testing.T, bin string, launcher []string, o stackOptions) *stack {
	t.Helper()
	o.NoESM = true // started below, on the arm64 bootstrap
	o.Adjust = func(m *lambdaemu.Mapping) {
		m.Function.Timeout = emulatedTimeout
		m.Queue.VisibilityTimeout = emulatedTimeout + 30*time.Second
	}
	s := newStack(t, o)
	s.fc.Bootstrap = bin
	s.fc.Launcher = launcher
	s.fc.InitTimeout = time.Minute
	var err error
	s.esm, err = lambdaemu.NewESM(lambdaemu.ESMConfig{
		Mapping: s.mapping, SQS: s.clients.SQS, QueueURL: s.queues.URL, QueueARN: s.queues.ARN, Function: s.fc,
		PollWait: time.Second, OnBatch: s.batches.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.esm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.started = time.Now()
	return s
}

// TestArm64Bootstrap executes the arm64 bootstrap (the deployed architecture) end to end: its cold
// start, the quickstart's order workflow, 100 serial steps in one invocation, and a fan-out wider
// than InlineConcurrency converging through SQS, each step completed exactly once. Not parallel:
// the emulated bootstrap is CPU-bound, and its timings are logged.
func TestArm64Bootstrap(t *testing.T) {
	dynamotest.Require(t) // skips (or fails) without the emulators, before anything is built
	launcher := qemuLauncher(t)
	bin := arm64Bootstrap(t)
	how := "native"
	if len(launcher) > 0 {
		how = "emulated by " + filepath.Base(launcher[0])
		version := "version unknown"
		if out, err := exec.Command(launcher[0], "--version").Output(); err == nil {
			version = strings.SplitN(string(out), "\n", 2)[0]
		}
		t.Logf("launcher %s: %s", launcher[0], version)
	}
	t.Logf("arm64 bootstrap %.1f MB, built in %s; %s", float64(arm64Bin.size)/(1<<20), arm64Bin.took.Round(time.Millisecond), how)
	start := time.Now()
	defer func() { t.Logf("arm64 scenario (%s): %s in all", how, time.Since(start).Round(time.Millisecond)) }()

	t.Run("ColdStart", func(t *testing.T) { arm64ColdStart(t, bin, launcher) })
	t.Run("Quickstart", func(t *testing.T) {
		s := arm64Stack(t, bin, launcher, stackOptions{})
		ctx := context.Background()
		run, err := demo.FulfilOrder.Start(ctx, s.client, demo.Order{ID: "64", Items: []string{"book", "pen", "mug"}, Total: 30})
		if err != nil {
			t.Fatal(err)
		}
		info := s.wait(run.ID(), 5*time.Minute)
		out, err := run.Result(ctx)
		if info.Status != world.RunStatusCompleted || err != nil || out != "order 64: charged 30, label:book label:pen label:mug, shipped 64" {
			t.Fatalf("%s: %q, %v", info.Status, out, err)
		}
		s.drain(5 * time.Minute)
		s.noFailures()
		s.exactlyOnce(run.ID(), 5)
		st := s.esm.Stats()
		t.Logf("quickstart on arm64 (%s): run took %s (%s since the ESM started); %d invocations, %d messages, cold starts %v",
			how, info.CompletedAt.Sub(info.CreatedAt).Round(time.Millisecond), time.Since(s.started).Round(time.Millisecond),
			st.Batches, st.Messages, s.coldStarts())
	})
	t.Run("Serial100", func(t *testing.T) {
		s := arm64Stack(t, bin, launcher, stackOptions{})
		ctx := context.Background()
		run, err := demo.Serial.Start(ctx, s.client, 100)
		if err != nil {
			t.Fatal(err)
		}
		info := s.wait(run.ID(), 5*time.Minute)
		if out, err := run.Result(ctx); info.Status != world.RunStatusCompleted || err != nil || out != 100 {
			t.Fatalf("%s: %d, %v", info.Status, out, err)
		}
		took := info.CompletedAt.Sub(info.CreatedAt)
		s.drain(5 * time.Minute)
		s.noFailures()
		s.exactlyOnce(run.ID(), 100)
		if st := s.esm.Stats(); st.Batches != 1 || st.Messages != 1 {
			t.Errorf("%d invocations and %d messages, want 1 and 1", st.Batches, st.Messages)
		}
		t.Logf("100 serial steps on arm64 (%s) in %s (%s per step), cold starts %v", how, took.Round(time.Millisecond),
			(took / 100).Round(10*time.Microsecond), s.coldStarts())
	})
	t.Run("FanOut", func(t *testing.T) {
		s := arm64Stack(t, bin, launcher, stackOptions{Parameters: map[string]string{"InlineConcurrency": "4"}})
		if got := s.mapping.Function.Env["SKEIN_INLINE_CONCURRENCY"]; got != "4" {
			t.Fatalf("SKEIN_INLINE_CONCURRENCY=%q, want 4 from the parameter", got)
		}
		ctx := context.Background()
		run, err := demo.FanOut.Start(ctx, s.client, 20)
		if err != nil {
			t.Fatal(err)
		}
		info := s.wait(run.ID(), 5*time.Minute)
		if out, err := run.Result(ctx); info.Status != world.RunStatusCompleted || err != nil || out != 2470 {
			t.Fatalf("%s: %d, %v", info.Status, out, err)
		}
		s.drain(5 * time.Minute)
		s.noFailures()
		s.exactlyOnce(run.ID(), 20)
		groups, runMsgs := 0, 0
		background := map[string]int{}
		for _, m := range s.messages() {
			if m.StepID != "" {
				groups++
				background[m.StepID]++
			} else {
				runMsgs++
			}
		}
		st := s.esm.Stats()
		if len(background) == 0 || groups != 4 || runMsgs != 1 || st.Batches > 5 {
			t.Errorf("%d invocations, %d group messages, %d run messages; want at most 5, 4 (16 steps in groups of 4) and 1 (the start)",
				st.Batches, groups, runMsgs)
		}
		t.Logf("fan-out of 20 with InlineConcurrency 4 on arm64 (%s): run took %s; %d invocations, %d messages, %d background steps in %d messages, cold starts %v",
			how, info.CompletedAt.Sub(info.CreatedAt).Round(time.Millisecond), st.Batches, st.Messages, len(background), groups, s.coldStarts())
	})
}

// arm64ColdStart measures the arm64 bootstrap's cold start on an empty batch (process start to its
// first GET /next, Lambda's Init Duration, and to its first response), alternating with the host
// bootstrap run natively. Under emulation the figures say how the emulator does, not how Lambda's
// Graviton does: they are not comparable with native ones.
func arm64ColdStart(t *testing.T, bin string, launcher []string) {
	s := newStack(t, stackOptions{NoESM: true})
	const n = 5
	empty := []byte(`{"Records":[]}`)
	type series struct{ init, first []time.Duration }
	var arm, host series
	measure := func(cfg lambdaemu.FunctionConfig, into *series) {
		f, err := lambdaemu.NewFunction(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := f.Invoke(context.Background(), empty)
		if err != nil {
			t.Fatal(err)
		}
		var resp events.SQSEventResponse
		if r.Err != nil || !r.Cold || json.Unmarshal(r.Payload, &resp) != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("cold invocation: %+v (%s)", r, r.Payload)
		}
		if len(cfg.Launcher) > 0 && into == &arm {
			// the process is the launcher itself: qemu-user runs the program in its own process
			want, _ := filepath.EvalSymlinks(cfg.Launcher[0])
			if exe, err := os.Readlink("/proc/" + strconv.Itoa(f.PID()) + "/exe"); err == nil && exe != want {
				t.Errorf("the function's process runs %s, want the launcher %s", exe, want)
			}
		}
		into.init = append(into.init, r.InitDuration)
		into.first = append(into.first, r.InitDuration+r.Duration)
	}
	armCfg := s.fc
	armCfg.Bootstrap, armCfg.Launcher, armCfg.InitTimeout = bin, launcher, time.Minute
	armCfg.Timeout = emulatedTimeout
	measure(armCfg, &arm) // warm the page cache and the emulators
	measure(s.fc, &host)
	arm, host = series{}, series{}
	for range n {
		measure(armCfg, &arm)
		measure(s.fc, &host)
	}
	label := "emulated under qemu-user on " + runtime.GOARCH + ": not comparable with native"
	if len(launcher) == 0 {
		label = "native"
	}
	for _, x := range []struct {
		name string
		s    series
	}{{"arm64 bootstrap (" + label + ")", arm}, {runtime.GOARCH + " bootstrap (native, same machine, for scale)", host}} {
		slices.Sort(x.s.init)
		slices.Sort(x.s.first)
		t.Logf("%s, %d cold starts on an empty batch: init min %s median %s max %s; to first response min %s median %s max %s",
			x.name, n, x.s.init[0].Round(100*time.Microsecond), x.s.init[n/2].Round(100*time.Microsecond), x.s.init[n-1].Round(100*time.Microsecond),
			x.s.first[0].Round(100*time.Microsecond), x.s.first[n/2].Round(100*time.Microsecond), x.s.first[n-1].Round(100*time.Microsecond))
	}
}
