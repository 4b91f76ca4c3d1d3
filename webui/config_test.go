package webui_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/webui"
	"github.com/skeinflow/skein/world"
)

// listFails is a World whose ListRuns fails.
type listFails struct{ world.World }

func (listFails) ListRuns(context.Context, *world.ListRunsParams) (*world.Page[world.Run], error) {
	return nil, errors.New("the store is unreachable")
}

// lockedBuffer is a log sink safe for the handler's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
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

// TestDashboardUsesTheClientsWorldAndLogger: webui.Config names neither a
// World nor a Logger; the dashboard reads the Client's World and logs its
// request errors to the Client's Logger.
func TestDashboardUsesTheClientsWorldAndLogger(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	var logs lockedBuffer
	c, err := client.New(client.Config{World: listFails{lw}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h, err := webui.New(webui.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "the store is unreachable") {
		t.Fatalf("list page: %d %q; want 500 with the Client's World's error", rec.Code, rec.Body.String())
	}
	if got := logs.String(); !strings.Contains(got, "webui: list runs") || !strings.Contains(got, "the store is unreachable") {
		t.Fatalf("the Client's Logger got %q; want the list's error", got)
	}
}
