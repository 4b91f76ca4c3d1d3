package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinflow/skein/localworld"
)

// TestUIChecksBeforeLocking: a POST that is not an action from the
// dashboard's own page (another host, another site's Origin, no CSRF
// token, a token the form does not repeat) reaches the dashboard, which
// refuses it, without the store's lock taken; an action from the page
// has the lock.
func TestUIChecksBeforeLocking(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "ui.db")
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a := &actWorld{e: &env{db: db, stderr: &bytes.Buffer{}, actions: true}}
	var locked bool
	h := a.serve(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { locked = a.locked.Load() != nil }), []string{"127.0.0.1"})
	tok := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, host, origin, cookie, field string
		lock                              bool
	}{
		{"from the dashboard", "127.0.0.1:8080", "http://127.0.0.1:8080", tok, tok, true},
		{"another site", "127.0.0.1:8080", "http://evil.example", tok, tok, false},
		{"no origin", "127.0.0.1:8080", "", tok, tok, false},
		{"another host (DNS rebinding)", "evil.example:8080", "http://evil.example:8080", tok, tok, false},
		{"no CSRF cookie", "127.0.0.1:8080", "http://127.0.0.1:8080", "", tok, false},
		{"the form's token differs", "127.0.0.1:8080", "http://127.0.0.1:8080", tok, strings.Repeat("cd", 32), false},
	} {
		locked = false
		r := httptest.NewRequest(http.MethodPost, "/runs/wrun_x/cancel", strings.NewReader(url.Values{"csrf": {tc.field}}.Encode()))
		r.Host = tc.host
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if tc.cookie != "" {
			r.AddCookie(&http.Cookie{Name: "skein_csrf", Value: tc.cookie})
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if locked != tc.lock {
			t.Errorf("%s: the dashboard ran with the store locked %v, want %v", tc.name, locked, tc.lock)
		}
	}
}
