package main

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// TestUIAddr: the dashboard listens on loopback addresses only, unless
// -public says otherwise.
func TestUIAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr   string
		public bool
		ok     bool
	}{
		{"127.0.0.1:8080", false, true},
		{"localhost:0", false, true},
		{"[::1]:8080", false, true},
		{"0.0.0.0:8080", false, false},
		{":8080", false, false},
		{"192.168.1.5:8080", false, false},
		{"0.0.0.0:8080", true, true},
		{"nonsense", true, false},
	} {
		err := checkUIAddr(tc.addr, tc.public)
		if (err == nil) != tc.ok {
			t.Errorf("checkUIAddr(%q, public=%v) = %v, want ok=%v", tc.addr, tc.public, err, tc.ok)
		}
	}
	var stdout, stderr syncBuffer
	code := runWith(context.Background(), &env{stdout: &stdout, stderr: &stderr}, []string{"ui", "-addr", "0.0.0.0:0"})
	if code != 2 || !strings.Contains(stderr.String(), "-public") || !strings.Contains(stderr.String(), "no login") {
		t.Errorf("skein ui -addr 0.0.0.0:0 = %d\n%s", code, stderr.String())
	}
}

var servingRE = regexp.MustCompile(`serving on (http://127\.0\.0\.1:\d+) — local only`)

// startUI runs skein ui on the store the global flags name until the test
// ends, and returns its URL and output.
func startUI(t *testing.T, global ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runWith(ctx, &env{stdout: &stdout, stderr: &stderr}, append(global, "ui", "-addr", "127.0.0.1:0"))
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("skein ui exited %d\n%s", code, stderr.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := servingRE.FindStringSubmatch(stdout.String()); m != nil {
			return m[1], &stdout
		}
		select {
		case code := <-done:
			t.Fatalf("skein ui exited %d\n%s%s", code, stdout.String(), stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("skein ui did not say where it serves:\n%s%s", stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// postCancel posts the cancel form of run id to the dashboard at base, from
// one of its pages.
func postCancel(t *testing.T, base, id string) (int, string) {
	t.Helper()
	return postCancelFrom(t, base, id, base)
}

// postCancelFrom posts the cancel form from a page of origin.
func postCancelFrom(t *testing.T, base, id, origin string) (int, string) {
	t.Helper()
	tok := strings.Repeat("ab", 32)
	req, _ := http.NewRequest(http.MethodPost, base+"/runs/"+id+"/cancel", strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	req.AddCookie(&http.Cookie{Name: "skein_csrf", Value: tok})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(body)
}

// TestUIServes: skein ui serves the store's runs on 127.0.0.1 while a
// worker holds the store, reading it without the lock; an action is
// refused while the worker holds the store, naming why, and done once it
// has stopped, by the same dashboard.
func TestUIServes(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "ui.db")
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := client.New(client.Config{World: w})
	id, err := c.Start(context.Background(), "greeting", "hi")
	if err != nil {
		t.Fatal(err)
	}
	// The test holds the store, as a worker would.
	defer w.Close()
	base, out := startUI(t, "-db", db)
	if !strings.Contains(out.String(), "without holding it") {
		t.Errorf("skein ui does not say it reads without holding the store:\n%s", out.String())
	}
	resp, err := http.Get(base + "/runs/" + id)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "greeting") {
		t.Fatalf("GET run page = %d\n%s", resp.StatusCode, body)
	}
	code, page := postCancel(t, base, id)
	if code != http.StatusForbidden || !strings.Contains(page, "in use by another process") || !strings.Contains(page, "this action changes it") {
		t.Errorf("cancel on a held store = %d, want 403 saying why\n%s", code, page)
	}
	// A form posted from another site is refused as ever, and told nothing
	// of the process holding the store.
	if code, page := postCancelFrom(t, base, id, "http://elsewhere.example"); code != http.StatusForbidden ||
		!strings.Contains(page, "another site") || strings.Contains(page, "in use by another process") {
		t.Errorf("cancel from another site on a held store = %d\n%s", code, page)
	}
	if r, err := w.GetRun(context.Background(), &world.GetRunParams{RunID: id}); err != nil || r.Status.Terminal() {
		t.Fatalf("the refused cancel changed the run: %+v, %v", r, err)
	}
	if err := w.Close(); err != nil { // the worker stops
		t.Fatal(err)
	}
	if code, page := postCancel(t, base, id); code != http.StatusOK || !strings.Contains(page, "cancelled") {
		t.Errorf("cancel once the worker stopped = %d\n%s", code, page)
	}
}

// TestUIWritable: on a store no other process holds, the dashboard acts.
func TestUIWritable(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "ui.db")
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := client.New(client.Config{World: w})
	id, err := c.Start(context.Background(), "greeting", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	base, out := startUI(t, "-db", db)
	if strings.Contains(out.String(), "read-only") {
		t.Errorf("skein ui on a free store says read-only:\n%s", out.String())
	}
	tok := strings.Repeat("ab", 32)
	req, _ := http.NewRequest(http.MethodPost, base+"/runs/"+id+"/cancel", strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	req.AddCookie(&http.Cookie{Name: "skein_csrf", Value: tok})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "cancelled") {
		t.Errorf("cancel = %d\n%s", resp.StatusCode, body)
	}
}

// TestUIActsOnEncryptedStore: with -keys, the dashboard of a store no
// other process holds still takes the store for an action (the keys'
// wrapper goes over the per-action locking, not around it).
func TestUIActsOnEncryptedStore(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "sealed-ui.db")
	keyText := "k1=" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("1", encrypt.DataKeySize)))
	keys, err := encrypt.ParseLocalKeys(keyText)
	if err != nil {
		t.Fatal(err)
	}
	lw, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	w, err := encrypt.Wrap(lw, encrypt.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := client.New(client.Config{World: w})
	id, err := c.Start(context.Background(), "greeting", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	base, _ := startUI(t, "-db", db, "-keys", keyText)
	if code, page := postCancel(t, base, id); code != http.StatusOK || !strings.Contains(page, "cancelled") {
		t.Errorf("cancel on an encrypted store = %d\n%s", code, page)
	}
}
