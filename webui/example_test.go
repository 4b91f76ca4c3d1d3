package webui_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/webui"
)

// A worker's program serves the dashboard over its own store, writable,
// by mounting the handler on a mux (worker.Client() in a real program).
func Example() {
	w, err := localworld.Open(localworld.Config{}) // in memory
	if err != nil {
		panic(err)
	}
	defer w.Close()
	client, err := client.New(client.Config{World: w})
	if err != nil {
		panic(err)
	}
	ui, err := webui.New(webui.Config{Client: client, Hosts: webui.LoopbackHosts()})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", ui)
	// In a program: go http.ListenAndServe("127.0.0.1:8089", mux)

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8089/", nil))
	fmt.Println(rec.Code, strings.Contains(rec.Body.String(), "No runs"))
	// Output: 200 true
}

// TestConfig: New refuses a config without a client or with a bad page
// size.
func TestConfig(t *testing.T) {
	t.Parallel()
	w, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c, _ := client.New(client.Config{World: w})
	for _, tc := range []struct {
		name string
		cfg  webui.Config
		opts []knobs.Option
		ok   bool
	}{
		{"no client", webui.Config{}, nil, false},
		{"negative page", webui.Config{Client: c}, []knobs.Option{knobs.WithPageSize(-1)}, false},
		{"huge page", webui.Config{Client: c}, []knobs.Option{knobs.WithPageSize(100_000)}, false},
		{"defaults", webui.Config{Client: c}, nil, true},
	} {
		if _, err := webui.New(tc.cfg, tc.opts...); (err == nil) != tc.ok {
			t.Errorf("%s: New = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
