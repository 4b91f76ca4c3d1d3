package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe to read while the quickstart writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var dashboardRE = regexp.MustCompile(`dashboard: (http://127\.0\.0\.1:\d+)`)

// TestQuickstartDashboard: with -ui the worker serves the dashboard over
// its store, writable, and goes on serving after the order finishes.
func TestQuickstartDashboard(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errs lockedBuffer
	done := make(chan int, 1)
	db := filepath.Join(t.TempDir(), "quickstart.db")
	go func() {
		done <- run(ctx, []string{"-db", db, "-sleep", "0s", "-approve-after", "0s", "-ui", "127.0.0.1:0"}, &out, &errs)
	}()
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s:\n%s\n%s", what, out.String(), errs.String())
			}
		}
	}
	wait("the goes-on-serving line", func() bool { return strings.Contains(out.String(), "the dashboard goes on serving") })
	m := dashboardRE.FindStringSubmatch(out.String())
	id := runIDPattern.FindString(out.String())
	if m == nil || id == "" {
		t.Fatalf("no dashboard URL or run ID in:\n%s", out.String())
	}
	get := func(path string) string {
		resp, err := http.Get(m[1] + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d\n%s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	if list := get("/"); !strings.Contains(list, id) {
		t.Errorf("the list lacks run %s", id)
	}
	page := get("/runs/" + id)
	for _, want := range []string{"fulfil-order", "completed", "reserve-stock", `action="/runs/` + id + `/rerun"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	if strings.Contains(page, "read-only") {
		t.Error("the worker's dashboard is read-only")
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit code %d\n%s", code, errs.String())
	}
}
