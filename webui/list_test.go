package webui_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/webui"
	"github.com/skeinflow/skein/world"
)

var (
	runLinkRE = regexp.MustCompile(`href="/runs/(wrun_[0-9A-Z]+)"`)
	nextRE    = regexp.MustCompile(`id="next" href="([^"]+)"`)
)

// TestListPages: the list pages through every run newest first, one page
// at a time with no run twice, also when the time filter cuts a World page
// short; the filters narrow it; a bad filter or cursor is a 400.
func TestListPages(t *testing.T) {
	t.Parallel()
	w, err := localworld.Open(localworld.Config{Path: filepath.Join(t.TempDir(), "skein.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c, err := client.New(client.Config{World: w})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string // oldest first
	var created []time.Time
	for i := range 7 {
		name := "alpha"
		if i%2 == 1 {
			name = "beta"
		}
		var opts []client.StartOption
		if i%3 == 0 {
			opts = append(opts, client.WithVersion("v2"))
		}
		if i%4 == 0 {
			opts = append(opts, client.WithAttributes(map[string]string{"team": "blue"}))
		}
		id, err := c.Start(context.Background(), name, i, opts...)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := w.GetRun(context.Background(), &world.GetRunParams{RunID: id})
		ids, created = append(ids, id), append(created, r.CreatedAt)
		time.Sleep(3 * time.Millisecond) // distinct creation times
	}
	h, err := webui.New(webui.Config{Client: c}, knobs.WithPageSize(2))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	walk := func(path string) (got []string, pages int) {
		for path != "" {
			code, body := get(path)
			if code != http.StatusOK {
				t.Fatalf("GET %s = %d\n%s", path, code, body)
			}
			pages++
			for _, m := range runLinkRE.FindAllStringSubmatch(body, -1) {
				got = append(got, m[1])
			}
			path = ""
			if m := nextRE.FindStringSubmatch(body); m != nil {
				path = html.UnescapeString(m[1])
			}
		}
		return got, pages
	}
	newest := slices.Clone(ids)
	slices.Reverse(newest)
	for _, tc := range []struct {
		name, path string
		want       []string
		pages      int
	}{
		{"all", "/", newest, 4},
		{"workflow", "/?workflow=beta", []string{ids[5], ids[3], ids[1]}, 2},
		{"status", "/?status=completed", nil, 1},
		{"from", "/?from=" + created[4].Format(time.RFC3339Nano), newest[:3], 2},
		{"to", "/?to=" + created[4].Format(time.RFC3339Nano), newest[2:], 3},
		{"version", "/?version=v2", []string{ids[6], ids[3], ids[0]}, 2},
		{"no version", "/?version=-", []string{ids[5], ids[4], ids[2], ids[1]}, 2},
		{"attribute", "/?attr=team%3Dblue", []string{ids[4], ids[0]}, 1},
		{"attribute and workflow", "/?attr=team%3Dblue&workflow=beta", nil, 1},
		{"from and to", "/?from=" + created[1].Format(time.RFC3339Nano) + "&to=" + created[5].Format(time.RFC3339Nano), newest[1:6], 3},
	} {
		got, pages := walk(tc.path)
		if !slices.Equal(got, tc.want) || pages != tc.pages {
			t.Errorf("%s: got %v in %d pages, want %v in %d", tc.name, got, pages, tc.want, tc.pages)
		}
	}
	// A run's attributes link to the list of the runs that share them.
	if _, page := get("/runs/" + ids[4]); !strings.Contains(page, `<a class="attr" href="/?attr=team%3Dblue">team=blue</a>`) {
		t.Errorf("the run page lacks its attribute's link:\n%s", page)
	}
	for _, p := range []string{"/?status=bogus", "/?from=yesterday", "/?cursor=notacursor", "/?attr=team", "/?attr=%3Dblue", "/?attr=bad%20key%3Dx"} {
		if code, _ := get(p); code != http.StatusBadRequest {
			t.Errorf("GET %s = %d, want 400", p, code)
		}
	}
}

// TestRerunKeepsVersion: a rerun records the old run's code version, so
// that the deployment pinned to it runs the new one.
func TestRerunKeepsVersion(t *testing.T) {
	t.Parallel()
	w, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c, _ := client.New(client.Config{World: w})
	ctx := context.Background()
	id, err := c.Start(ctx, "alpha", 1, client.WithVersion("v7"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, id, "test"); err != nil {
		t.Fatal(err)
	}
	h, _ := webui.New(webui.Config{Client: c})
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:1/runs/"+id+"/rerun", strings.NewReader("csrf="+token))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://127.0.0.1:1")
	req.AddCookie(&http.Cookie{Name: "skein_csrf", Value: token})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	loc := rec.Header().Get("Location")
	if rec.Code != http.StatusSeeOther || !strings.HasPrefix(loc, "/runs/wrun_") {
		t.Fatalf("rerun = %d %q\n%s", rec.Code, loc, rec.Body.String())
	}
	newID := strings.TrimSuffix(strings.TrimPrefix(loc, "/runs/"), "?done=rerun")
	r, err := w.GetRun(ctx, &world.GetRunParams{RunID: newID})
	if err != nil || r.Version != "v7" || r.WorkflowName != "alpha" || string(r.Input) != "1" {
		t.Errorf("the rerun is %+v (%v), want workflow alpha, input 1, version v7", r, err)
	}
}
