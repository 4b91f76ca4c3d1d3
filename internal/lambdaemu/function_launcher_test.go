//go:build unix

package lambdaemu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gone reports whether process pid has ended within d: it no longer exists, or is a zombie (a
// killed child of the launcher is reparented and may wait to be reaped).
func gone(pid int, d time.Duration) bool {
	limit := time.Now().Add(d)
	for {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			// the state follows the command name, which is in parentheses
			if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
				return true
			}
		} else if _, err := os.Stat("/proc/self/stat"); err == nil {
			return true // /proc works and pid is not in it
		} else if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			return true
		}
		if time.Now().After(limit) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFunctionLauncherScript runs the echo bootstrap through a shell script that starts it as a
// child (no exec), with an argument of its own: the bootstrap gets the function's environment and
// working directory, cold and warm starts are counted as without a launcher, and a timeout or Close
// kills the bootstrap with the launcher (its process group).
func TestFunctionLauncherScript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "launch.sh")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
# A launcher that runs the bootstrap as its child and waits for it.
marker=$1
shift
SKEIN_LAUNCHED="$marker $* in $(pwd)"
export SKEIN_LAUNCHED
"$@"
`), 0o755); err != nil {
		t.Fatal(err)
	}
	fn := newEchoFunction(t, FunctionConfig{Timeout: time.Second, Launcher: []string{script, "--marker"}})
	bin := fn.cfg.Bootstrap

	first := invoke(t, fn, "ok")
	r := decodeEcho(t, first)
	launcher := fn.PID()
	if !first.Cold || first.InitDuration <= 0 {
		t.Errorf("first invocation: Cold=%v InitDuration=%s", first.Cold, first.InitDuration)
	}
	if want := "--marker " + bin + " in " + filepath.Dir(bin); r.Echo.Env["SKEIN_LAUNCHED"] != want {
		t.Errorf("the launcher ran as %q, want %q", r.Echo.Env["SKEIN_LAUNCHED"], want)
	}
	if r.Echo.Env["_HANDLER"] != "bootstrap" || r.Echo.Env["LAMBDA_TASK_ROOT"] != filepath.Dir(bin) ||
		!strings.HasPrefix(r.Echo.Env["AWS_LAMBDA_RUNTIME_API"], "127.0.0.1:") || r.Echo.Env["AWS_LAMBDA_FUNCTION_NAME"] != "echo" {
		t.Errorf("environment through the launcher: %v", r.Echo.Env)
	}
	if launcher == 0 || r.Echo.PID == launcher {
		t.Fatalf("the bootstrap (pid %d) is not the launcher's child (pid %d)", r.Echo.PID, launcher)
	}
	if pg, err := syscall.Getpgid(r.Echo.PID); err != nil || pg != launcher {
		t.Errorf("the bootstrap's process group is %d (%v), want the launcher's %d", pg, err, launcher)
	}

	warm := invoke(t, fn, "ok")
	if r2 := decodeEcho(t, warm); warm.Cold || r2.Echo.PID != r.Echo.PID || r2.Echo.Invocations != 2 || fn.PID() != launcher {
		t.Errorf("second invocation not warm: cold=%v pid %d->%d invocations=%d", warm.Cold, r.Echo.PID, r2.Echo.PID, r2.Echo.Invocations)
	}

	resp := invoke(t, fn, "sleep 10s")
	if resp.Err == nil || resp.Err.Type != "Sandbox.Timedout" {
		t.Fatalf("got %+v", resp.Err)
	}
	if !gone(launcher, 2*time.Second) || !gone(r.Echo.PID, 2*time.Second) {
		t.Errorf("after the timeout: launcher %d gone %v, bootstrap %d gone %v", launcher, gone(launcher, 0), r.Echo.PID, gone(r.Echo.PID, 0))
	}
	if fn.PID() != 0 {
		t.Errorf("PID = %d after a timeout, want 0", fn.PID())
	}

	after := invoke(t, fn, "ok")
	r3 := decodeEcho(t, after)
	if !after.Cold || r3.Echo.PID == r.Echo.PID || r3.Echo.Invocations != 1 {
		t.Errorf("after a timeout: cold=%v pid %d->%d", after.Cold, r.Echo.PID, r3.Echo.PID)
	}
	if st := fn.Stats(); st.ColdStarts != 2 || st.Timeouts != 1 || st.Invocations != 4 || st.LastInitDuration <= 0 {
		t.Errorf("stats %+v", st)
	}
	launcher = fn.PID()
	if err := fn.Close(); err != nil {
		t.Fatal(err)
	}
	if !gone(launcher, 2*time.Second) || !gone(r3.Echo.PID, 2*time.Second) {
		t.Errorf("after Close: launcher %d or bootstrap %d still runs", launcher, r3.Echo.PID)
	}
}

// TestFunctionLauncherFromPATH: a launcher named without a path is looked up in PATH, gets its
// arguments before the bootstrap's path, and one that execs the bootstrap (env) leaves it the
// process PID reports; Kill mid-invocation is a crash, as without a launcher.
func TestFunctionLauncherFromPATH(t *testing.T) {
	t.Parallel()
	envPath, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env in PATH")
	}
	launcher := []string{"env", "SKEIN_VIA_ENV=yes"}
	fn := newEchoFunction(t, FunctionConfig{Timeout: 30 * time.Second, Launcher: launcher})
	if got := fn.cfg.Launcher; len(got) != 2 || got[0] != envPath || launcher[0] != "env" {
		t.Errorf("resolved launcher %q (from %q), want %s first", got, launcher, envPath)
	}
	r := decodeEcho(t, invoke(t, fn, "ok"))
	if r.Echo.Env["SKEIN_VIA_ENV"] != "yes" || r.Echo.PID != fn.PID() {
		t.Errorf("env launcher: SKEIN_VIA_ENV=%q, bootstrap pid %d, Function.PID %d", r.Echo.Env["SKEIN_VIA_ENV"], r.Echo.PID, fn.PID())
	}

	done := make(chan *Response, 1)
	go func() {
		resp, err := fn.Invoke(context.Background(), sqsPayload(t, "sleep 20s"))
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	for start := time.Now(); fn.InFlight() == ""; time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the invocation never started")
		}
	}
	if err := fn.Kill(); err != nil {
		t.Fatal(err)
	}
	if resp := <-done; resp == nil || resp.Err == nil || resp.Err.Type != "Runtime.ExitError" || !strings.Contains(resp.Err.Message, "signal: killed") {
		t.Fatalf("got %+v", resp)
	}
	if st := fn.Stats(); st.Crashes != 1 || st.ColdStarts != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestFunctionLauncherConfig: the checks NewFunction makes on a launcher.
func TestFunctionLauncherConfig(t *testing.T) {
	t.Parallel()
	bin := buildEcho(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "bootstrap")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, b, 0o644); err != nil { // readable, not executable
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		bootstrap string
		launcher  []string
		ok        bool
	}{
		{"not in PATH", bin, []string{"skein-no-such-launcher"}, false},
		{"empty program", bin, []string{""}, false},
		{"missing file", bin, []string{filepath.Join(dir, "missing")}, false},
		{"not executable", bin, []string{plain}, false},
		{"a directory", bin, []string{dir}, false},
		{"non-executable bootstrap without a launcher", plain, nil, false},
		{"non-executable bootstrap with a launcher", plain, []string{"env"}, true},
	} {
		_, err := NewFunction(FunctionConfig{Bootstrap: c.bootstrap, Launcher: c.launcher})
		if (err == nil) != c.ok {
			t.Errorf("%s: NewFunction error %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// TestFunctionLauncherQEMU runs the echo bootstrap built for arm64 under qemu-user
// (SKEIN_QEMU_AARCH64, as `make emulator-test` sets it from scripts/qemu.sh) and checks that a
// timeout kills the emulated process. Skipped when the variable is not set.
func TestFunctionLauncherQEMU(t *testing.T) {
	t.Parallel()
	qemu := os.Getenv("SKEIN_QEMU_AARCH64")
	if qemu == "" {
		t.Skip("SKEIN_QEMU_AARCH64 is not set (bash scripts/qemu.sh path prints it)")
	}
	bin := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", bin, "./testdata/echo")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/echo for arm64: %v\n%s", err, out)
	}
	fn, err := NewFunction(FunctionConfig{Bootstrap: bin, Name: "echo-arm64", Timeout: 3 * time.Second,
		InitTimeout: time.Minute, Launcher: []string{qemu}, Stderr: newLineWriter(t, "bootstrap: ")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fn.Close() })
	first := invoke(t, fn, "ok", "fail")
	r := decodeEcho(t, first)
	if !first.Cold || r.Echo.PID != fn.PID() || len(r.BatchItemFailures) != 1 || r.BatchItemFailures[0].ItemIdentifier != "m2" {
		t.Errorf("cold=%v pid %d (Function.PID %d), failures %+v", first.Cold, r.Echo.PID, fn.PID(), r.BatchItemFailures)
	}
	warm := invoke(t, fn, "ok")
	if r2 := decodeEcho(t, warm); warm.Cold || r2.Echo.PID != r.Echo.PID || r2.Echo.Invocations != 2 {
		t.Errorf("not warm: cold=%v invocations %d", warm.Cold, r2.Echo.Invocations)
	}
	resp := invoke(t, fn, "sleep 30s")
	if resp.Err == nil || resp.Err.Type != "Sandbox.Timedout" {
		t.Fatalf("got %+v", resp.Err)
	}
	if !gone(r.Echo.PID, 2*time.Second) {
		t.Errorf("the emulated bootstrap %d survived the timeout", r.Echo.PID)
	}
	t.Logf("arm64 echo under qemu (emulated): init %s, first invocation %s, warm invocation %s",
		first.InitDuration.Round(100*time.Microsecond), first.Duration.Round(100*time.Microsecond), warm.Duration.Round(100*time.Microsecond))
}
