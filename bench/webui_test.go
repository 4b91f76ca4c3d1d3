package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/webui"
)

// BenchmarkWebUIRunsList measures the dashboard's runs list, rendered in
// full (the World's query and the HTML page of 50 runs), on a local store
// file holding 10,000 runs of five workflows, one in ten cancelled: the
// first page, a page 100 pages in (by its cursor), a workflow filter, a
// status filter that matches one run in ten, and a creation-time window
// that skips the newest half. It reports ms per page.
func BenchmarkWebUIRunsList(b *testing.B) {
	const runs = 10_000
	w, err := localworld.Open(localworld.Config{Path: filepath.Join(b.TempDir(), "ui.db"), Sync: localworld.SyncNone})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	c, err := client.New(client.Config{World: w})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var mid time.Time
	for i := range runs {
		id, err := c.Start(ctx, fmt.Sprintf("workflow-%d", i%5), map[string]int{"order": i})
		if err != nil {
			b.Fatal(err)
		}
		if i%10 == 0 {
			if err := c.Cancel(ctx, id, "benchmark"); err != nil {
				b.Fatal(err)
			}
		}
		if i == runs/2 {
			mid = time.Now()
		}
	}
	h, err := webui.New(webui.Config{Client: c})
	if err != nil {
		b.Fatal(err)
	}
	get := func(b *testing.B, path string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s = %d", path, rec.Code)
		}
		return rec.Body.String()
	}
	// A cursor 100 pages in: follow the next links.
	deep := "/"
	for range 100 {
		body := get(b, deep)
		i := strings.Index(body, `id="next" href="`)
		if i < 0 {
			b.Fatal("no next page")
		}
		rest := body[i+len(`id="next" href="`):]
		deep = strings.ReplaceAll(rest[:strings.IndexByte(rest, '"')], "&amp;", "&")
	}
	for _, tc := range []struct{ name, path string }{
		{"first-page", "/"},
		{"page-101", deep},
		{"workflow", "/?workflow=workflow-3"},
		{"status-cancelled", "/?status=cancelled"},
		{"created-before-midpoint", "/?to=" + url.QueryEscape(mid.Format(time.RFC3339Nano))},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if n := strings.Count(get(b, tc.path), `<td class="mono"><a href="/runs/`); n != 50 {
				b.Fatalf("%s lists %d runs, want 50", tc.path, n)
			}
			b.ResetTimer()
			for b.Loop() {
				get(b, tc.path)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}
