package localworld

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// The SIGKILL test re-executes the test binary as a child that writes to a
// durable store and reports each write on stdout only after the call that
// made it returned. The parent kills it with SIGKILL mid-stream, reopens the
// store and checks that everything reported is there.
const (
	killChildEnv     = "LOCALWORLD_SIGKILL_CHILD_PATH"
	killChildSyncEnv = "LOCALWORLD_SIGKILL_CHILD_SYNC"
)

// TestSIGKILLChild is the child's body; it does nothing in a normal run.
func TestSIGKILLChild(t *testing.T) {
	t.Parallel()
	path := os.Getenv(killChildEnv)
	if path == "" {
		t.Skip("helper process of TestSIGKILLDurability")
	}
	policy := SyncEveryCommit
	if os.Getenv(killChildSyncEnv) == SyncBatch.String() {
		policy = SyncBatch
	}
	w, err := Open(Config{Path: path, Sync: policy})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...) // one write per line, unbuffered
	}
	ctx := context.Background()
	stop := time.Now().Add(30 * time.Second) // a safety net: the parent kills us long before
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			runID := testIDs.New(world.PrefixRun)
			evs := []world.EventInput{ev("", &world.RunCreated{WorkflowName: "killme"}), ev("", &world.RunStarted{})}
			for time.Now().Before(stop) {
				res, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: evs})
				if err != nil {
					report("ERR append %v", err)
					os.Exit(2)
				}
				for _, r := range res.Results {
					report("E %s %d", runID, r.Event.Seq)
				}
				evs = []world.EventInput{ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: "s", Input: json.RawMessage(`[1]`)})}
				if rand.IntN(3) == 0 { // some 3-event commits
					evs = append(evs, ev(testIDs.New(world.PrefixWait), &world.WaitCreated{ResumeAt: time.Now()}))
				}
			}
		})
	}
	wg.Go(func() {
		for time.Now().Before(stop) {
			delay := 200*time.Millisecond + rand.N(800*time.Millisecond)
			res, err := w.Enqueue(ctx, &world.EnqueueParams{Body: []byte("m"), Delay: delay})
			if err != nil {
				report("ERR enqueue %v", err)
				os.Exit(2)
			}
			report("M %s %d", res.MessageID, delay)
			time.Sleep(5 * time.Millisecond)
		}
	})
	wg.Wait()
	os.Exit(3)
}

func TestSIGKILLDurability(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	for _, policy := range []SyncPolicy{SyncEveryCommit, SyncBatch} {
		t.Run(policy.String(), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "world.db")
			cmd := exec.Command(os.Args[0], "-test.run=^TestSIGKILLChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), killChildEnv+"="+path, killChildSyncEnv+"="+policy.String())
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}

			var mu sync.Mutex
			maxSeq := map[string]int64{}       // run -> highest reported seq
			msgs := map[string]time.Duration{} // message -> delay
			var events int
			var bad []string
			done := make(chan struct{})
			go func() {
				defer close(done)
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					f := strings.Fields(sc.Text())
					mu.Lock()
					switch {
					case len(f) == 3 && f[0] == "E":
						seq, _ := strconv.ParseInt(f[2], 10, 64)
						maxSeq[f[1]] = max(maxSeq[f[1]], seq)
						events++
					case len(f) == 3 && f[0] == "M":
						d, _ := strconv.ParseInt(f[2], 10, 64)
						msgs[f[1]] = time.Duration(d)
					case len(f) > 0 && f[0] == "ERR":
						bad = append(bad, sc.Text())
					}
					mu.Unlock()
				}
			}()

			// Let it write for a while, then kill it in the middle of a write.
			deadline := time.Now().Add(20 * time.Second)
			for {
				mu.Lock()
				n, m := events, len(msgs)
				mu.Unlock()
				if n >= 300 && m >= 30 {
					break
				}
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					t.Fatalf("child reported only %d events and %d messages; stderr:\n%s", n, m, stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			killedAt := time.Now()
			_ = cmd.Wait()
			<-done
			if len(bad) > 0 {
				t.Fatalf("child failed: %v\n%s", bad, stderr.String())
			}
			if cmd.ProcessState.Success() {
				t.Fatal("child exited by itself")
			}
			t.Logf("killed after %d events in %d runs and %d messages reported", events, len(maxSeq), len(msgs))

			w := mustOpen(t, Config{Path: path})
			for runID, want := range maxSeq {
				got := allEvents(t, w, runID)
				for i, e := range got {
					if e.Seq != int64(i+1) {
						t.Fatalf("run %s: event %d has seq %d: not dense", runID, i, e.Seq)
					}
				}
				if int64(len(got)) < want {
					t.Fatalf("run %s: %d events survived, but the child reported seq %d committed", runID, len(got), want)
				}
				run, err := w.GetRun(context.Background(), &world.GetRunParams{RunID: runID})
				if err != nil || run.LastSeq != int64(len(got)) {
					t.Fatalf("run %s: %+v, %v; log has %d events", runID, run, err, len(got))
				}
			}

			pending := make(map[string]time.Duration, len(msgs))
			for id, d := range msgs {
				pending[id] = d
			}
			recvDeadline := killedAt.Add(15 * time.Second)
			for len(pending) > 0 && time.Now().Before(recvDeadline) {
				ds, err := w.Receive(context.Background(), &world.ReceiveParams{Max: 100, Wait: 500 * time.Millisecond, Visibility: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				now := time.Now()
				for _, d := range ds {
					if delay, ok := pending[d.MessageID]; ok {
						if due := d.EnqueuedAt.Add(delay); now.Before(due) {
							t.Fatalf("message %s delivered %s before its delay ended", d.MessageID, due.Sub(now))
						}
						delete(pending, d.MessageID)
					}
					if err := w.Ack(context.Background(), &world.AckParams{Receipt: d.Receipt}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if len(pending) > 0 {
				t.Fatalf("%d of %d reported messages were never delivered after the restart", len(pending), len(msgs))
			}
		})
	}
}
