package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// wantResult is order 1001's result, whatever happened to the processes that
// ran it.
const wantResult = `{"orderId":"1001","chargeId":"ch_1001","chargedCents":5650,"paymentAttempts":2,` +
	`"reserved":[{"sku":"MUG-BLUE","qty":2,"bin":"F-03"},{"sku":"TEE-L","qty":1,"bin":"E-36"},{"sku":"STICKER","qty":5,"bin":"C-28"}],` +
	`"approvedBy":"dana@shop.example","tracking":"SKN-1001-CC57"}`

var runIDPattern = regexp.MustCompile(`wrun_[0-9A-Z]{26}`)

// resultOf returns the JSON of the output's "result" line.
func resultOf(t *testing.T, out string) string {
	t.Helper()
	for line := range strings.Lines(out) {
		if rest, ok := strings.CutPrefix(line, "result "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("no result line in:\n%s", out)
	return ""
}

// inOrder checks that the output holds each of want, in this order.
func inOrder(t *testing.T, out string, want ...string) {
	t.Helper()
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("output lacks %q (after the previous expected lines):\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
}

func runQuickstart(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errs bytes.Buffer
	code := run(ctx, args, &out, &errs)
	if errs.Len() > 0 {
		t.Logf("stderr:\n%s", errs.String())
	}
	// The retry of charge-card is on the timeline; its log line (a raw
	// WARN among the timeline's lines on a terminal) is not repeated.
	if strings.Contains(errs.String(), "step retrying") {
		t.Errorf("the worker logged a retry the timeline shows:\n%s", errs.String())
	}
	return out.String(), code
}

func TestQuickstartInProcess(t *testing.T) {
	t.Parallel()
	args := []string{"-db", filepath.Join(t.TempDir(), "qs.db"), "-sleep", "150ms", "-approve-after", "50ms"}

	out, code := runQuickstart(t, args...)
	if code != 0 {
		t.Fatalf("exit code %d:\n%s", code, out)
	}
	inOrder(t, out,
		"order 1001 (3 lines, $56.50)",
		"started run wrun_",
		"↻ charge-card attempt 1 failed: payment gateway: 503 Service Unavailable",
		"✓ charge-card (attempt 2)",
		`waiting for approval (hook "approve/1001")`,
		`✓ approved by dana@shop.example: "looks good, ship it"`,
		"sleeping until",
		"✓ woke up",
		"✓ ship",
		"✓ run completed",
		"order 1001 shipped",
	)
	for _, line := range []string{
		"│ payment: charged $56.50 to the card ending 4242",
		"│ stock: reserved 2 × MUG-BLUE in bin F-03",
		"│ stock: reserved 1 × TEE-L in bin E-36",
		"│ stock: reserved 5 × STICKER in bin C-28",
		"✓ reserve-stock MUG-BLUE", "✓ reserve-stock TEE-L", "✓ reserve-stock STICKER",
		"│ shipping: label printed, tracking SKN-1001-CC57",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q", line)
		}
	}
	if got := resultOf(t, out); got != wantResult {
		t.Fatalf("result\n got %s\nwant %s", got, wantResult)
	}
	runID := runIDPattern.FindString(out)
	// The cleanup hook archived the receipt before Result returned.
	receipt := filepath.Join(args[1]+".receipts", "1001.json")
	inOrder(t, out, "result ", "receipt archived to "+receipt+" (cleanup done)")
	var rc Receipt
	if b, err := os.ReadFile(receipt); err != nil || json.Unmarshal(b, &rc) != nil || rc.RunID != runID || rc.Tracking != "SKN-1001-CC57" || rc.Result.OrderID != "1001" {
		t.Fatalf("receipt %s: %+v, %v", receipt, rc, err)
	}

	// Started again, the same order is the same run: its recorded result.
	again, code := runQuickstart(t, args...)
	if code != 0 {
		t.Fatalf("second start: exit code %d:\n%s", code, again)
	}
	inOrder(t, again, "order 1001 already finished: run "+runID+" completed")
	if got := resultOf(t, again); got != wantResult {
		t.Fatalf("recorded result\n got %s\nwant %s", got, wantResult)
	}

	// -sleep applies to new orders only: the same order started with
	// another one (another input under the same key) is still its run.
	other, code := runQuickstart(t, append(args, "-sleep", "1s")...)
	if code != 0 {
		t.Fatalf("start with another -sleep: exit code %d:\n%s", code, other)
	}
	inOrder(t, other, "order 1001 already finished: run "+runID+" completed")

	// -fresh places a new order: a new run.
	fresh, code := runQuickstart(t, append(args, "-fresh")...)
	if code != 0 {
		t.Fatalf("-fresh: exit code %d:\n%s", code, fresh)
	}
	inOrder(t, fresh, "order 1001-", "started run wrun_", "✓ run completed", `"orderId":"1001-`)
	if id := runIDPattern.FindString(fresh); id == runID {
		t.Fatalf("-fresh reused run %s", id)
	}
}

func TestQuickstartUsage(t *testing.T) {
	t.Parallel()
	if _, code := runQuickstart(t, "-no-such-flag"); code != 2 {
		t.Errorf("unknown flag: exit code %d, want 2", code)
	}
	if _, code := runQuickstart(t, "extra"); code != 2 {
		t.Errorf("stray argument: exit code %d, want 2", code)
	}
	if _, code := runQuickstart(t, "-h"); code != 0 {
		t.Errorf("-h: exit code %d, want 0", code)
	}
}

// TestQuickstartResumesAfterKill builds the program, SIGKILLs it while it
// waits for approval, starts it again and SIGKILLs it while it sleeps, then
// lets a third start finish the run: one run, each step completed once.
func TestQuickstartResumesAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "quickstart")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "qs.db")

	first := runBinary(t, bin, "waiting for approval", "-db", db, "-sleep", "1s", "-approve-after", "3s")
	inOrder(t, first, "started run wrun_", "✓ charge-card", "waiting for approval")
	runID := runIDPattern.FindString(first)

	second := runBinary(t, bin, "sleeping until", "-db", db, "-sleep", "1s", "-approve-after", "100ms")
	inOrder(t, second, "resuming run "+runID, `waiting for approval (hook "approve/1001")`, "✓ approved by", "sleeping until")
	if strings.Contains(second, "✓ charge-card") || strings.Contains(second, "│ payment") {
		t.Errorf("the resumed run charged the card again:\n%s", second)
	}

	third := runBinary(t, bin, "", "-db", db, "-sleep", "1s", "-approve-after", "100ms")
	inOrder(t, third, "resuming run "+runID, "✓ ship", "✓ run completed", "order 1001 shipped")
	if got := resultOf(t, third); got != wantResult {
		t.Fatalf("result\n got %s\nwant %s", got, wantResult)
	}

	// The log: one run, one run_completed, one step_completed per step.
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	runs, err := w.ListRuns(ctx, &world.ListRunsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs.Items) != 1 || runs.Items[0].RunID != runID || runs.Items[0].Status != world.RunStatusCompleted {
		t.Fatalf("runs: %+v", runs.Items)
	}
	counts := make(map[world.EventType]int)
	completedPerStep := make(map[string]int)
	names := make(map[string]string)
	for cursor := ""; ; {
		page, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Cursor: cursor}})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Items {
			counts[ev.Type()]++
			switch d := ev.Data.(type) {
			case *world.StepCreated:
				names[ev.CorrelationID] = d.StepName
			case *world.StepCompleted:
				completedPerStep[ev.CorrelationID]++
			}
		}
		if !page.HasMore {
			break
		}
		cursor = page.Cursor
	}
	if counts[world.EventRunCompleted] != 1 || counts[world.EventRunFailed]+counts[world.EventRunCancelled] != 0 {
		t.Errorf("terminal events: %v", counts)
	}
	perName := make(map[string]int)
	for id, name := range names {
		if n := completedPerStep[id]; n != 1 {
			t.Errorf("step %s (%s) completed %d times", id, name, n)
		}
		perName[name]++
	}
	if perName["charge-card"] != 1 || perName["reserve-stock"] != 3 || perName["ship"] != 1 || len(names) != 5 {
		t.Errorf("steps by name: %v", perName)
	}
	if counts[world.EventStepCompleted] != 5 || counts[world.EventStepRetrying] != 1 || counts[world.EventHookReceived] != 1 {
		t.Errorf("event counts: %v", counts)
	}
}

// runBinary runs the program and returns its output. With killOn set, it
// SIGKILLs the program shortly after a line containing killOn (and fails if
// the program ends first); otherwise it expects exit code 0.
func runBinary(t *testing.T, bin, killOn string, args ...string) string {
	t.Helper()
	// A generous bound: a process killed while holding the run's lease
	// delays the next one by up to the lease's 30s.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	killed := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if killOn != "" && !killed && strings.Contains(sc.Text(), killOn) {
			// Past the line, the run is suspended in the store; the pause
			// lets the invocation that suspended it finish, as a real kill
			// usually lands well after.
			time.Sleep(300 * time.Millisecond)
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	t.Logf("%s %s:\n%s%s", filepath.Base(bin), strings.Join(args, " "), out.String(), stderr.String())
	switch {
	case killOn != "" && !killed:
		t.Fatalf("the program ended (%v) before printing %q", err, killOn)
	case killOn == "" && err != nil:
		t.Fatalf("the program failed: %v", err)
	}
	return out.String()
}
