package skeinhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/skeinhttp"
	"github.com/skeinflow/skein/world"
)

// A run's stream: its state first, then its events as they commit, read
// back with Read.
func ExampleNewEvents() {
	w, _ := localworld.Open(localworld.Config{}) // in memory
	defer w.Close()
	client, _ := client.New(client.Config{World: w})
	h, _ := skeinhttp.NewEvents(skeinhttp.EventsConfig{Client: client})
	mux := http.NewServeMux()
	mux.Handle("GET /events", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := context.Background()
	run := world.NewIDSource(nil, nil).New(world.PrefixRun)
	commit := func(d world.EventData) {
		_, _ = w.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{Data: d}}})
	}
	commit(&world.RunCreated{WorkflowName: "greet", Input: json.RawMessage(`"Ada"`)})

	resp, err := http.Get(srv.URL + "/events?snapshot=1&run=" + run)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.Header.Get("Content-Type"))
	for m := range skeinhttp.Read(resp.Body) {
		switch m.Event {
		case "snapshot":
			var st world.RunState
			_ = json.Unmarshal([]byte(m.Data), &st)
			fmt.Println("snapshot:", st.Run.WorkflowName, st.Run.Status)
			commit(&world.RunStarted{}) // committed while the stream is open
			commit(&world.RunCompleted{Output: json.RawMessage(`"hello, Ada"`)})
		case "":
			var e world.Event
			_ = json.Unmarshal([]byte(m.Data), &e)
			fmt.Println("event:", e.Seq, e.Type())
		default:
			fmt.Println(m.Event)
		}
	}
	// Output:
	// text/event-stream
	// snapshot: greet pending
	// event: 2 run_started
	// event: 3 run_completed
	// end
}
