package localworld

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
	killChildEnv        = "LOCALWORLD_SIGKILL_CHILD_PATH"
	killChildSyncEnv    = "LOCALWORLD_SIGKILL_CHILD_SYNC"
	killChildCompactEnv = "LOCALWORLD_SIGKILL_CHILD_COMPACT" // compactMin, in bytes
)

// compactionStarted is what the child's debug log says as a compaction
// begins; the parent kills it then.
const compactionStarted = "localworld: compaction started"

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
	cfg := Config{Path: path, Sync: policy}
	compact, _ := strconv.ParseInt(os.Getenv(killChildCompactEnv), 10, 64)
	if compact > 0 {
		cfg.compactMin = compact
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	w, err := Open(cfg)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	ctx := context.Background()
	if compact > 0 {
		// Live data, so that a snapshot takes a while to write.
		chunk := bytes.Repeat([]byte("p"), 64<<10)
		for range 16 {
			if err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: "wrun_padding", Name: "pad", Chunks: [][]byte{chunk}}); err != nil {
				fmt.Println("ERR", err)
				os.Exit(2)
			}
		}
	}
	var mu sync.Mutex
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...) // one write per line, unbuffered
	}
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
	if compact > 0 {
		// Churn: rewrites that grow the log but not the live data.
		wg.Go(func() {
			owner := strings.Repeat("o", 32<<10)
			for time.Now().Before(stop) {
				if _, err := w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: "wrun_padding", Owner: owner}); err != nil {
					report("ERR lease %v", err)
					os.Exit(2)
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
	for _, c := range []struct {
		policy  SyncPolicy
		compact bool // compact often, and kill as a compaction starts
	}{
		{SyncEveryCommit, false},
		{SyncBatch, false},
		{SyncBatch, true},
		{SyncEveryCommit, true},
	} {
		name := c.policy.String()
		if c.compact {
			name += "/compacting"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			policy := c.policy
			path := filepath.Join(t.TempDir(), "world.db")
			cmd := exec.Command(os.Args[0], "-test.run=^TestSIGKILLChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), killChildEnv+"="+path, killChildSyncEnv+"="+policy.String())
			if c.compact {
				cmd.Env = append(cmd.Env, killChildCompactEnv+"="+strconv.Itoa(256<<10))
			}
			var stderr lockedBuilder
			compactions := make(chan struct{}, 1000)
			stderrPipe, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			stderrDone := make(chan struct{})
			go func() {
				defer close(stderrDone)
				sc := bufio.NewScanner(stderrPipe)
				for sc.Scan() {
					stderr.WriteLine(sc.Text())
					if strings.Contains(sc.Text(), compactionStarted) {
						compactions <- struct{}{}
					}
				}
			}()

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
			if c.compact {
				// Kill it as the next compaction starts (or a little later).
				for len(compactions) > 0 {
					<-compactions
				}
				select {
				case <-compactions:
				case <-time.After(20 * time.Second):
					_ = cmd.Process.Kill()
					t.Fatalf("no compaction started; stderr:\n%s", stderr.String())
				}
				time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			} else {
				time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
			}
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			killedAt := time.Now()
			<-done
			<-stderrDone
			_ = cmd.Wait()
			if len(bad) > 0 {
				t.Fatalf("child failed: %v\n%s", bad, stderr.String())
			}
			if cmd.ProcessState.Success() {
				t.Fatal("child exited by itself")
			}
			t.Logf("killed after %d events in %d runs and %d messages reported", events, len(maxSeq), len(msgs))

			if c.compact {
				t.Logf("%d compactions finished, %d leftover files", strings.Count(stderr.String(), "compacted the log"), len(compactLeftovers(path)))
			}
			// A kill in the middle of a write can leave that (never
			// acknowledged) commit's record incomplete: Open refuses the
			// file until told to drop it.
			w, err := Open(Config{Path: path})
			if errors.Is(err, ErrTornTail) {
				t.Logf("torn tail, as a kill in the middle of a write leaves: %v", err)
				w, err = Open(Config{Path: path, RepairTornTail: true})
			}
			if err != nil {
				t.Fatalf("Open after the kill: %v", err)
			}
			t.Cleanup(func() { _ = w.Close() })
			if left := compactLeftovers(path); len(left) > 0 {
				t.Fatalf("Open left %v", left)
			}
			if got := fmt.Sprintf("%T", w.s.kv); got != "*localworld.logStore" {
				t.Fatalf("reopened as %s", got)
			}
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

// lockedBuilder collects lines from one goroutine for another.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) WriteLine(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
	l.b.WriteByte('\n')
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
