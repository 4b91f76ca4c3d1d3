package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// The restart test re-executes the test binary as a worker process that
// starts a run whose steps block, and kills it with SIGKILL mid-step.
const restartChildEnv = "ENGINE_RESTART_CHILD_PATH"

// openRestartStore opens the store of the restart test.
func openRestartStore(t *testing.T, path string) *harness {
	t.Helper()
	cfg := localworld.Config{Path: path}
	lw, err := localworld.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	h := &harness{t: t, lw: lw, w: lw, reg: newRegistry(), ids: world.NewIDSource(nil, nil)}
	// The default step lease (a minute): the restart must not wait it out.
	// One step runs inline, the other is queued.
	h.eng, err = New(Config{World: lw, Registry: h.reg, Options: Options{InlineConcurrency: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.eng.Close)
	h.reg.wf("restart", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		a, b := c.Step("block", mustJSON("a")), c.Step("block", mustJSON("b"))
		c.Await(func() bool { return a.Done() && b.Done() })
		ra, _ := a.Result()
		rb, _ := b.Result()
		return mustJSON([]json.RawMessage{ra, rb}), nil
	})
	return h
}

// TestRestartChild is the worker process of TestRestartTakesUpAbandonedSteps;
// it does nothing in a normal run. It prints "RUN <id>", then "STEP <input>"
// as each step starts; the steps never end.
func TestRestartChild(t *testing.T) {
	path := os.Getenv(restartChildEnv)
	if path == "" {
		t.Skip("helper process of TestRestartTakesUpAbandonedSteps")
	}
	h := openRestartStore(t, path)
	h.reg.step("block", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		fmt.Printf("STEP %s\n", in)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	fmt.Printf("RUN %s\n", h.start("restart", nil))
	h.work(2, nil)
	time.Sleep(time.Minute) // until killed
	t.Error("the worker was not killed")
}

// A worker killed in the middle of its steps (SIGKILL) leaves their leases
// behind, a minute long by default. Opening the store again expires them
// (the lock proves their holder gone), and the restarted worker must take
// the steps up at once: not wait out the expiry that step_started recorded.
func TestRestartTakesUpAbandonedSteps(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "world.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRestartChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), restartChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	runID, steps := "", 0
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	timeout := time.After(20 * time.Second)
	for steps < 2 {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("the worker exited before its steps started")
			}
			if id, found := strings.CutPrefix(line, "RUN "); found {
				runID = id
			}
			if strings.HasPrefix(line, "STEP ") {
				steps++
			}
		case <-timeout:
			t.Fatalf("the worker started %d steps in 20s", steps)
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL, mid-step
		t.Fatal(err)
	}
	_ = cmd.Wait()

	began := time.Now()
	h := openRestartStore(t, path)
	h.reg.step("block", 0, func(_ context.Context, in json.RawMessage) (json.RawMessage, error) { return in, nil })
	h.work(2, nil)
	run := h.wait(runID)
	took := time.Since(began)
	if run.Status != world.RunStatusCompleted || string(run.Output) != `["a","b"]` {
		t.Fatalf("run %s %s %+v", run.Status, run.Output, run.Error)
	}
	if took > 30*time.Second { // well under the leases' minute, whatever the load
		t.Fatalf("the restarted worker finished the run after %s; want it to take up the abandoned steps at once", took)
	}
	t.Logf("the restarted worker finished the run in %s", took.Round(time.Millisecond))
}
