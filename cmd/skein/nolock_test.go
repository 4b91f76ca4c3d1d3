package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// A command that only reads never holds the store: started before the
// worker, runs watch, streams read -follow and skein ui leave the store
// free, so that the worker opens it (with its lock) while they run, and
// they show what the worker then writes.
func TestReadersLeaveTheStoreFree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		args  func(id string) []string
		ready string // the command's output once it has the store open
		// after checks that the command sees what the worker wrote: a
		// run it started (newID) and a chunk "late" on the first run's
		// default stream.
		after func(t *testing.T, out *syncBuffer, newID string)
	}{
		{"runs watch", func(string) []string { return []string{"runs", "watch", "-snapshot"} }, "pending after event 1",
			func(t *testing.T, out *syncBuffer, newID string) { waitFor(t, out, newID) }},
		{"runs watch one run", func(id string) []string { return []string{"runs", "watch", id} }, "",
			func(t *testing.T, out *syncBuffer, _ string) {}},
		{"streams read -follow", func(id string) []string { return []string{"streams", "read", id, "-follow"} }, "early\n",
			func(t *testing.T, out *syncBuffer, _ string) { waitFor(t, out, "early\nlate\n") }},
		{"ui", func(string) []string { return []string{"ui", "-addr", "127.0.0.1:0"} }, "serving on",
			func(t *testing.T, out *syncBuffer, newID string) {
				base := servingRE.FindStringSubmatch(out.String())[1]
				resp, err := http.Get(base + "/runs/" + newID)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), newID) {
					t.Fatalf("GET the worker's new run = %d\n%s", resp.StatusCode, body)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "free.db")
			id := seedStore(t, db)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cctx, stop := context.WithCancel(ctx)
			var out, errb syncBuffer
			done := make(chan int, 1)
			go func() {
				done <- runWith(cctx, &env{stdout: &out, stderr: &errb}, append([]string{"-db", db}, tc.args(id)...))
			}()
			defer func() { stop(); <-done }()
			if tc.ready != "" {
				waitFor(t, &out, tc.ready)
			} else {
				time.Sleep(200 * time.Millisecond) // a watch of one run prints nothing before a new event
			}

			// The worker starts: it takes the store's lock.
			w, err := localworld.Open(localworld.Config{Path: db, LockTimeout: 500 * time.Millisecond})
			if err != nil {
				t.Fatalf("the worker cannot open the store while skein %s runs: %v\n%s", tc.name, err, errb.String())
			}
			defer w.Close()
			c, _ := client.New(client.Config{World: w})
			newID, err := c.Start(ctx, "greeting", "again")
			if err != nil {
				t.Fatal(err)
			}
			if err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: id, Name: "user", Chunks: [][]byte{[]byte("blate\n")}}); err != nil {
				t.Fatal(err)
			}
			if err := c.Cancel(ctx, id, "done"); err != nil {
				t.Fatal(err)
			}
			tc.after(t, &out, newID)
			select {
			case code := <-done:
				if tc.name == "runs watch one run" && code == 0 {
					done <- code // the watch ended with the run, as it should
					return
				}
				t.Fatalf("skein %s ended early (exit %d): %s%s", tc.name, code, out.String(), errb.String())
			default:
			}
		})
	}
}

// seedStore makes a store with a run of "greeting" that has written
// "early\n" to its default stream (stored as "user", a chunk of bytes
// tagged 'b'), and returns the run's ID.
func seedStore(t *testing.T, db string) string {
	t.Helper()
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := client.New(client.Config{World: w})
	ctx := context.Background()
	id, err := c.Start(ctx, "greeting", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: id, Name: "user", Chunks: [][]byte{[]byte("bearly\n")}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return id
}

// waitFor waits until out holds want.
func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output %q never held %q", out.String(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A command that changes a store another process holds says which process
// (where the system tells: Linux) and exits 1 after its lock timeout.
func TestWriteNamesHolder(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "held.db")
	id := seedStore(t, db)
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var out, errb bytes.Buffer
	code := runWith(context.Background(), &env{stdout: &out, stderr: &errb, lockTimeout: 50 * time.Millisecond},
		[]string{"-db", db, "runs", "cancel", id})
	r := result{out.String(), errb.String(), code}
	want := []string{"in use by another process", "runs cancel changes it", "gave up waiting after 50ms"}
	if runtime.GOOS == "linux" {
		want = append(want, fmt.Sprintf("(process %d: ", os.Getpid()))
	}
	r.expect(t, 1, want...)
}

// A bbolt-format store (testdata/bolt-store-v1.bbolt, two greeting runs made
// by the version before the format was retired) is refused by every
// command, naming skein store migrate; the migration copies its runs to a
// new log store, leaves the old file as it was, and refuses to overwrite.
// A damaged one is refused or migrated with the damage listed, never a
// crash.
func TestBoltStoreMigrate(t *testing.T) {
	t.Parallel()
	const (
		run1 = "wrun_01M8J2SM4E5R7H17YYHDG7Q9B8"
		run2 = "wrun_01M8J2SM5JJ2Q14VT0A7JWQXB4"
	)
	orig, err := os.ReadFile(filepath.Join("testdata", "bolt-store-v1.bbolt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	old, to := filepath.Join(dir, "old.db"), filepath.Join(dir, "new.skein")
	if err := os.WriteFile(old, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	runCLI := func(args ...string) result {
		var out, errb bytes.Buffer
		code := runWith(context.Background(), &env{stdout: &out, stderr: &errb, lockTimeout: 50 * time.Millisecond}, args)
		return result{out.String(), errb.String(), code}
	}
	runCLI("-db", old, "runs", "list").expect(t, 1, "bbolt format", "skein store migrate -from "+old+" -to ")
	runCLI("-db", old, "runs", "cancel", run1).expect(t, 1, "bbolt format", "skein store migrate -from "+old)
	runCLI("store", "migrate", "-from", old).expect(t, 2, "-to is required")
	runCLI("-db", old, "store", "migrate", "-to", to).expect(t, 0, "copied 2 runs", "nothing was skipped")
	if after, _ := os.ReadFile(old); !bytes.Equal(after, orig) {
		t.Fatal("the migration changed the old store")
	}
	runCLI("-db", to, "runs", "list").expect(t, 0, run1, run2)
	runCLI("-db", to, "runs", "show", run2).expect(t, 0, "greeting", "grace")
	runCLI("store", "migrate", "-from", old, "-to", to).expect(t, 1, "exists")

	cut := filepath.Join(dir, "cut.db")
	if err := os.WriteFile(cut, orig[:3*4096], 0o600); err != nil {
		t.Fatal(err)
	}
	runCLI("store", "migrate", "-from", cut, "-to", filepath.Join(dir, "cut.skein")).expect(t, 1, "truncated")
}
