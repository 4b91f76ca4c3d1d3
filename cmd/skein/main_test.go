package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// The store the CLI is tested on is made by a small workflow: a step that
// fails once and is retried, a fan-out, a hook, a sleep and two streams.

type demoInput struct {
	N     int    `json:"n"`
	Token string `json:"token"`
}

var (
	flaky = workflow.NewStep("flaky", func(ctx context.Context, n int) (int, error) {
		m, _ := workflow.StepMetadataFrom(ctx)
		if m.Attempt == 1 {
			return 0, workflow.RetryAfter(errors.New("flaky: try again"), time.Millisecond)
		}
		_, err := fmt.Fprintf(workflow.Writer(ctx, ""), "flaky done on attempt %d", m.Attempt)
		return 2 * n, err
	})
	square = workflow.NewStep("square", func(ctx context.Context, n int) (int, error) {
		return n * n, workflow.Writer(ctx, "progress").WriteJSON(map[string]int{"squared": n})
	})
	demo = workflow.New("demo", func(ctx workflow.Context, in demoInput) (int, error) {
		a, err := flaky.Call(ctx, in.N)
		if err != nil {
			return 0, err
		}
		sq, err := workflow.All(ctx, square.Go(ctx, a), square.Go(ctx, a+1))
		if err != nil {
			return 0, err
		}
		bonus, err := workflow.NewHook[int](ctx, workflow.HookOptions{Token: in.Token, Metadata: map[string]int{"n": in.N}}).Receive(ctx)
		if err != nil {
			return 0, err
		}
		if err := workflow.Sleep(ctx, 20*time.Millisecond); err != nil {
			return 0, err
		}
		return sq[0] + sq[1] + bonus, nil
	})
)

// fixture is a durable store holding a completed run and a run waiting on
// its hook.
type fixture struct {
	db               string
	doneID, waitID   string
	doneTok, waitTok string
}

func prepare(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{db: filepath.Join(t.TempDir(), "skein.db"), doneTok: "bonus/done", waitTok: "bonus/waiting"}
	w, err := localworld.Open(localworld.Config{Path: f.db})
	if err != nil {
		t.Fatal(err)
	}
	reg := workflow.NewRegistry()
	if err := reg.Register(demo, flaky, square); err != nil {
		t.Fatal(err)
	}
	worker, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 4, Version: "v1.0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = worker.Run(wctx) }()
	c := worker.Client()

	done, err := demo.Start(ctx, c, demoInput{N: 3, Token: f.doneTok})
	if err != nil {
		t.Fatal(err)
	}
	resume(ctx, t, c, f.doneTok, 100)
	if got, err := done.Result(ctx); err != nil || got != 6*6+7*7+100 {
		t.Fatalf("demo result: %d, %v", got, err)
	}
	// The second run records no version (a client that knows none).
	unversioned, err := client.New(client.Config{World: w, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := demo.Start(ctx, unversioned, demoInput{N: 1, Token: f.waitTok})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := c.GetHookByToken(ctx, f.waitTok); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	<-stopped
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.doneID, f.waitID = done.ID(), waiting.ID()
	return f
}

func resume(ctx context.Context, t *testing.T, c *client.Client, token string, v int) {
	t.Helper()
	for {
		if _, err := c.ResumeHook(ctx, token, v); err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatal("the hook never appeared")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type result struct {
	out, err string
	code     int
}

func cli(args ...string) result {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return result{out.String(), errb.String(), code}
}

func (r result) expect(t *testing.T, code int, substrings ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.out, r.err)
	}
	all := r.out + r.err
	for _, s := range substrings {
		if !strings.Contains(all, s) {
			t.Errorf("output lacks %q\nstdout:\n%s\nstderr:\n%s", s, r.out, r.err)
		}
	}
}

func TestCLI(t *testing.T) {
	t.Parallel()
	f := prepare(t)
	db := []string{"-db", f.db}
	unknown := "wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T"

	t.Run("runs list", func(t *testing.T) {
		r := cli(append(db, "runs", "list")...)
		r.expect(t, 0, "ID", "WORKFLOW", "VERSION", "STATUS", "CREATED", "DURATION", f.doneID, f.waitID, "completed", "running")
		if strings.Index(r.out, f.waitID) > strings.Index(r.out, f.doneID) {
			t.Errorf("not newest first:\n%s", r.out)
		}
		if !regexp.MustCompile(f.doneID+`\s+demo\s+v1\.0\s+completed`).MatchString(r.out) ||
			!regexp.MustCompile(f.waitID+`\s+demo\s+-\s+running`).MatchString(r.out) {
			t.Errorf("the VERSION column does not show v1.0 and - (none):\n%s", r.out)
		}
		r = cli(append(db, "runs", "list", "-version", "v1.0")...)
		r.expect(t, 0, f.doneID)
		if strings.Contains(r.out, f.waitID) {
			t.Errorf("-version v1.0 lists the run without a version:\n%s", r.out)
		}
		r = cli(append(db, "runs", "list", "-version", "-")...)
		r.expect(t, 0, f.waitID)
		if strings.Contains(r.out, f.doneID) {
			t.Errorf("-version - lists the run of v1.0:\n%s", r.out)
		}
		cli(append(db, "runs", "list", "-version", "v9")...).expect(t, 0, "no runs")
		r = cli("runs", "list", "-status", "completed", "-db", f.db) // flags after the command, -db too
		r.expect(t, 0, f.doneID)
		if strings.Contains(r.out, f.waitID) {
			t.Errorf("-status completed lists the running run:\n%s", r.out)
		}
		cli(append(db, "runs", "list", "-limit", "1")...).expect(t, 0, f.waitID, "(more runs")
		cli(append(db, "runs", "list", "-workflow", "nope")...).expect(t, 0, "no runs")
		r = cli(append(db, "runs", "list", "-json")...)
		r.expect(t, 0)
		var ids []string
		for line := range strings.Lines(r.out) {
			var run world.Run
			if err := json.Unmarshal([]byte(line), &run); err != nil {
				t.Fatalf("not a run: %v: %s", err, line)
			}
			ids = append(ids, run.RunID)
		}
		if len(ids) != 2 || ids[0] != f.waitID || ids[1] != f.doneID {
			t.Errorf("-json runs: %v", ids)
		}
		cli(append(db, "runs", "list", "-status", "bogus")...).expect(t, 2, "unknown status")
	})

	t.Run("runs show", func(t *testing.T) {
		r := cli(append(db, "runs", "show", f.doneID)...)
		r.expect(t, 0, "Run        "+f.doneID, "Workflow   demo", "Version    v1.0", "Status     completed", "Ended", "At rest    ", "after the end", "Output     185",
			"Timeline", "STEP", "TRY", "STATUS", "TOOK", "flaky: try again", "hook bonus/done", "received", "sleep ", "attempt ok")
		rows := map[string]string{}
		for line := range strings.Lines(r.out) {
			if fields := strings.Fields(line); len(fields) > 3 {
				rows[fields[0]] = line
			}
		}
		for name, want := range map[string][]string{
			"flaky":  {" 2  completed", "▒", "█"},
			"square": {" 1  completed", "█"},
			"sleep":  {"completed", "─"},
			"hook":   {"received", "●"},
		} {
			for _, w := range want {
				if !strings.Contains(rows[name], w) {
					t.Errorf("the %s row lacks %q: %q", name, w, rows[name])
				}
			}
		}
		if strings.Contains(r.out, "\x1b[") {
			t.Errorf("ANSI codes written to a non-terminal:\n%q", r.out)
		}
		cli(append(db, "runs", "show", f.waitID, "-width", "20")...).expect(t, 0, "Status     running", "hook bonus/waiting", "waiting")
		cli(append(db, "runs", "show", unknown)...).expect(t, 1, "run "+unknown+" not found")
		cli(append(db, "runs", "show", "nope")...).expect(t, 2, `"nope" is not a run ID`)
		cli(append(db, "runs", "show")...).expect(t, 2, "want 1 argument(s)", "Usage: skein runs show")
		cli(append(db, "runs", "show", f.doneID, "-width", "3")...).expect(t, 2, "-width")
	})

	t.Run("runs events", func(t *testing.T) {
		r := cli(append(db, "runs", "events", f.doneID)...)
		r.expect(t, 0)
		var events []world.Event
		for line := range strings.Lines(r.out) {
			var ev world.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("not an event: %v: %s", err, line)
			}
			if ev.RunID != f.doneID || ev.Seq != int64(len(events)+1) {
				t.Fatalf("event %d: run %s seq %d", len(events)+1, ev.RunID, ev.Seq)
			}
			events = append(events, ev)
		}
		// A run at rest ends its log with run_deactivated, right after its end.
		if len(events) < 10 || events[0].Type() != world.EventRunCreated || events[len(events)-2].Type() != world.EventRunCompleted ||
			events[len(events)-1].Type() != world.EventRunDeactivated {
			t.Fatalf("%d events, from %s to %s", len(events), events[0].Type(), events[len(events)-1].Type())
		}
		cli(append(db, "runs", "events", unknown)...).expect(t, 1, "not found")
	})

	t.Run("streams", func(t *testing.T) {
		cli(append(db, "streams", "list", f.doneID)...).expect(t, 0, "NAME", "(default)", "progress", "closed")
		cli(append(db, "streams", "read", f.doneID)...).expect(t, 0, "flaky done on attempt 2\n")
		r := cli(append(db, "streams", "read", f.doneID, "-name", "progress")...)
		r.expect(t, 0, `{"squared":6}`, `{"squared":7}`)
		if n := strings.Count(r.out, "\n"); n != 2 {
			t.Errorf("%d lines, want 2:\n%s", n, r.out)
		}
		r = cli(append(db, "streams", "read", f.doneID, "-name", "progress", "-start", "-1")...)
		if r.expect(t, 0); strings.Count(r.out, "\n") != 1 {
			t.Errorf("-start -1: %q", r.out)
		}
		cli(append(db, "streams", "read", f.doneID, "-start", "5")...).expect(t, 0)
		// The run has ended and its streams are closed: -follow ends too.
		cli(append(db, "streams", "read", f.doneID, "-follow", "-name", "progress")...).expect(t, 0, `{"squared":7}`)
		// A stream the run does not have: said on stderr, with the streams
		// it has; exit 1 once the run has ended.
		for _, args := range [][]string{{"-name", "Progress"}, {"-name", "Progress", "-follow"}} {
			r := cli(append(append(db, "streams", "read", f.doneID), args...)...)
			r.expect(t, 1, `has no stream "Progress"`, `its streams: (default), "progress"`)
		}
		r = cli(append(db, "streams", "read", f.waitID, "-name", "nope")...)
		r.expect(t, 0)
		if !strings.Contains(r.err, `run `+f.waitID+` has no stream "nope" yet`) || r.out != "" {
			t.Errorf("missing stream of a running run: stdout %q stderr %q", r.out, r.err)
		}
		cli(append(db, "streams", "list", unknown)...).expect(t, 1, "not found")
		cli(append(db, "streams", "read", unknown)...).expect(t, 1, "not found")
	})

	t.Run("hooks", func(t *testing.T) {
		r := cli(append(db, "hooks", "list")...)
		r.expect(t, 0, "TOKEN", "RUN", f.waitTok, f.waitID, `{"n":1}`)
		if strings.Contains(r.out, f.doneTok) {
			t.Errorf("a finished run's hook is listed:\n%s", r.out)
		}
		cli(append(db, "hooks", "list", "-run", f.doneID)...).expect(t, 0, "no active hooks")
		cli(append(db, "hooks", "list", "-run", unknown)...).expect(t, 1, "not found")
		r = cli(append(db, "hooks", "list", "-json")...)
		var h world.Hook
		if err := json.Unmarshal([]byte(r.out), &h); err != nil || h.Token != f.waitTok {
			t.Errorf("-json: %v %q", err, r.out)
		}

		cli(append(db, "hooks", "resume", f.waitTok, "7")...).expect(t, 0, "resumed hook", f.waitID)
		file := filepath.Join(t.TempDir(), "payload.json")
		if err := os.WriteFile(file, []byte(" 8\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cli(append(db, "hooks", "resume", f.waitTok, "@"+file)...).expect(t, 0, "resumed hook")
		var out, errb bytes.Buffer
		e := &env{stdin: strings.NewReader(`9`), stdout: &out, stderr: &errb}
		if code := runWith(context.Background(), e, append(db, "hooks", "resume", f.waitTok, "-")); code != 0 {
			t.Fatalf("payload from stdin: exit %d: %s", code, errb.String())
		}
		var payloads []string
		for line := range strings.Lines(cli(append(db, "runs", "events", f.waitID)...).out) {
			var ev world.Event
			if err := json.Unmarshal([]byte(line), &ev); err == nil && ev.Type() == world.EventHookReceived {
				payloads = append(payloads, string(ev.Data.(*world.HookReceived).Payload))
			}
		}
		if strings.Join(payloads, ",") != "7,8,9" {
			t.Errorf("payloads recorded: %v", payloads)
		}
		cli(append(db, "hooks", "resume", "no/such/token", "1")...).expect(t, 1, `no active hook holds the token "no/such/token"`)
		cli(append(db, "hooks", "resume", f.waitTok, "{bad")...).expect(t, 2, "not valid JSON")
		cli(append(db, "hooks", "resume", f.waitTok)...).expect(t, 2, "want 2 argument(s)")
	})

	t.Run("runs cancel", func(t *testing.T) {
		cli(append(db, "runs", "cancel", f.waitID, "-reason", "test says so")...).expect(t, 0, "cancelled run "+f.waitID)
		cli(append(db, "runs", "show", f.waitID)...).expect(t, 0, "Status     cancelled", "Reason     test says so")
		cli(append(db, "runs", "cancel", f.waitID)...).expect(t, 0, "already cancelled")
		cli(append(db, "runs", "cancel", f.doneID)...).expect(t, 1, "has already completed")
		cli(append(db, "runs", "cancel", unknown)...).expect(t, 1, "not found")
		cli(append(db, "hooks", "list")...).expect(t, 0, "no active hooks")
	})

	t.Run("locked store", func(t *testing.T) {
		w, err := localworld.Open(localworld.Config{Path: f.db})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		// Reads work while another World holds the store (live_test.go has more);
		// a repair, which writes, says why not.
		runCLI := func(args ...string) result {
			var out, errb bytes.Buffer
			e := &env{stdout: &out, stderr: &errb, lockTimeout: 50 * time.Millisecond}
			code := runWith(context.Background(), e, append(db, args...))
			return result{out.String(), errb.String(), code}
		}
		runCLI("runs", "list").expect(t, 0, f.doneID, f.waitID)
		runCLI("-repair-torn-tail", "runs", "list").expect(t, 1, "is in use by another process", "stop that process")
	})
}

// tearLastWrite appends to the log store at path what a process killed in
// the middle of its next write leaves: a record's header and the start of
// its payload, then the zeros of the space allocated ahead of it. It
// returns the file's new size.
func tearLastWrite(t *testing.T, path string) int64 {
	t.Helper()
	rec := binary.LittleEndian.AppendUint32([]byte("SKR1"), 1000) // magic, payload length
	rec = binary.LittleEndian.AppendUint32(rec, 0xdeadbeef)       // the checksum of the whole record
	rec = binary.LittleEndian.AppendUint64(rec, 1<<40)            // seq
	rec = append(rec, bytes.Repeat([]byte("x"), 100)...)          // the part written
	rec = append(rec, make([]byte, 1<<12)...)                     // the rest, never written
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(rec); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A store whose last record is incomplete (a process killed in the middle
// of a write) is refused with advice and left untouched; -repair-torn-tail,
// before the command or among its flags, drops that record and keeps the
// rest. A store cut short (truncated) is refused without that advice, and
// -repair-torn-tail does not touch it: it is damage, not a torn write.
func TestRepairTornTail(t *testing.T) {
	t.Parallel()
	f := prepare(t)
	tear := func() int64 { return tearLastWrite(t, f.db) }
	size := func() int64 {
		t.Helper()
		fi, err := os.Stat(f.db)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}

	torn := tear()
	r := cli("-db", f.db, "runs", "list")
	r.expect(t, 1, "skein runs list: ", f.db, "incomplete", "run the command again with -repair-torn-tail")
	if got := size(); got != torn {
		t.Fatalf("the refused store changed size: %d, want %d", got, torn)
	}
	cli("-db", f.db, "runs", "show", f.doneID).expect(t, 1, "-repair-torn-tail")

	r = cli("-db", f.db, "-repair-torn-tail", "runs", "list")
	r.expect(t, 0, f.doneID, "completed", "dropped the incomplete last record")
	// It cut the file at the torn record's start and dropped everything
	// after it (opening may then write, e.g. to release what the previous
	// process held, so the size alone says nothing).
	m := regexp.MustCompile(`offset=(\d+) bytes=(\d+)`).FindStringSubmatch(r.err)
	if m == nil {
		t.Fatalf("the repair's warning names no offset and bytes:\n%s", r.err)
	}
	offset, _ := strconv.ParseInt(m[1], 10, 64)
	dropped, _ := strconv.ParseInt(m[2], 10, 64)
	if dropped <= 0 || offset+dropped != torn {
		t.Fatalf("the repair dropped %d bytes at %d, want the end of the %d-byte torn store", dropped, offset, torn)
	}
	cli("-db", f.db, "runs", "show", f.doneID).expect(t, 0, "Status     completed") // repaired for good

	tear()
	cli("-db", f.db, "runs", "show", f.doneID).expect(t, 1, "-repair-torn-tail")
	cli("runs", "show", f.doneID, "-repair-torn-tail", "-db", f.db).expect(t, 0, "Status     completed", "dropped the incomplete last record")
	cli("-db", f.db, "hooks", "list").expect(t, 0)

	cut := size() - 1
	if err := os.Truncate(f.db, cut); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"runs", "list"}, {"-repair-torn-tail", "runs", "list"}, {"runs", "cancel", f.doneID}} {
		r := cli(append([]string{"-db", f.db}, args...)...)
		r.expect(t, 1, f.db, "cut short", "restore the file from a copy")
		if strings.Contains(r.err, "-repair-torn-tail") {
			t.Fatalf("skein %v advises -repair-torn-tail for a store cut short:\n%s", args, r.err)
		}
		if got := size(); got != cut {
			t.Fatalf("the refused store changed size: %d, want %d", got, cut)
		}
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	cli().expect(t, 2, "Usage:", "runs list")
	cli("-h").expect(t, 0, "Usage:", "streams read", "-repair-torn-tail")
	cli("help").expect(t, 0, "Commands:")
	cli("help", "runs").expect(t, 0, "Usage: skein runs <command>")
	cli("help", "runs", "show").expect(t, 0, "Usage: skein runs show <runId>", "Examples:", "-no-color")
	cli("help", "nope").expect(t, 2, "unknown command")
	cli("nope").expect(t, 2, `unknown command "nope"`)
	cli("runs").expect(t, 2, "a command is required", "Usage: skein runs <command>")
	cli("runs", "-h").expect(t, 0, "Usage: skein runs <command>")
	cli("runs", "nope").expect(t, 2, `unknown command "runs nope"`)
	cli("runs", "list", "-nope").expect(t, 2, "flag provided but not defined", "Usage: skein runs list")
	cli("runs", "list", "extra").expect(t, 2, "want 0 argument(s)")
	for _, c := range commands {
		r := cli(c.group, c.name, "--help")
		r.expect(t, 0, "Usage: skein "+c.fullName(), "Examples:", "-db", "-repair-torn-tail")
		if r.err != "" {
			t.Errorf("%s --help wrote to stderr: %s", c.fullName(), r.err)
		}
	}
	missing := filepath.Join(t.TempDir(), "missing.db")
	cli("-db", missing, "runs", "list").expect(t, 1, "no store at "+missing)
	if _, err := os.Stat(missing); err == nil {
		t.Error("the CLI created a store")
	}
}

// A failed attempt and its retry that fall in one cell of a long run's bar
// both show: the retry takes the next cell (under load, the CLI test's
// flaky step saw its failed attempt painted over).
func TestTimelineShortAttemptsBothShow(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, corr string, d world.EventData) world.Event {
		return world.Event{RunID: "wrun_x", CorrelationID: corr, CreatedAt: at(ms), Data: d}
	}
	step, wait := "step_01J9Z3K7QH5V2M8X4N6P0R1S2T", "wait_01J9Z3K7QH5V2M8X4N6P0R1S2V"
	events := []world.Event{
		ev(0, step, &world.StepCreated{StepName: "charge"}),
		ev(0, step, &world.StepStarted{Attempt: 1}),
		ev(1, step, &world.StepRetrying{Error: &world.ErrorData{Message: "503"}}),
		ev(1, step, &world.StepStarted{Attempt: 2}),
		ev(2, step, &world.StepCompleted{}),
		ev(2, wait, &world.WaitCreated{ResumeAt: at(10000)}),
		ev(10000, wait, &world.WaitCompleted{}),
	}
	run := &world.Run{RunID: "wrun_x", Status: world.RunStatusCompleted, CreatedAt: start, CompletedAt: at(10000)}
	var out bytes.Buffer
	drawTimeline(&out, run, events, at(10000), timelineOptions{width: 10})
	if !strings.Contains(out.String(), "2  completed  ▒█ ") {
		t.Errorf("the failed attempt or its retry is not shown:\n%s", out.String())
	}
}

func TestTimelineColour(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, corr string, d world.EventData) world.Event {
		return world.Event{RunID: "wrun_x", CorrelationID: corr, CreatedAt: at(ms), Data: d}
	}
	step := "step_01J9Z3K7QH5V2M8X4N6P0R1S2T"
	events := []world.Event{
		ev(0, step, &world.StepCreated{StepName: "charge"}),
		ev(0, step, &world.StepStarted{Attempt: 1}),
		ev(100, step, &world.StepRetrying{Error: &world.ErrorData{Message: "503"}}),
		ev(500, step, &world.StepStarted{Attempt: 2}),
		ev(1000, step, &world.StepCompleted{}),
	}
	run := &world.Run{RunID: "wrun_x", Status: world.RunStatusCompleted, CreatedAt: start, CompletedAt: at(1000)}
	var plain, coloured bytes.Buffer
	drawTimeline(&plain, run, events, at(1000), timelineOptions{width: 10})
	drawTimeline(&coloured, run, events, at(1000), timelineOptions{width: 10, style: style{color: true}})
	if !strings.Contains(plain.String(), "charge    2  completed  ▒····█████  1s      503") {
		t.Errorf("plain:\n%s", plain.String())
	}
	if !strings.Contains(coloured.String(), "\x1b[32m█████\x1b[0m") || !strings.Contains(coloured.String(), "\x1b[31m▒\x1b[0m") {
		t.Errorf("coloured:\n%q", coloured.String())
	}
}
