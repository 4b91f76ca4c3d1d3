package webui_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/webui"
	"github.com/skeinflow/skein/world"
)

// TestFailHeldCompensating: the fail form of a held run has a compensate
// box; ticked, run_failed asks for the run's compensations; unticked, the
// client's default applies (none, for a client without the workflow).
func TestFailHeldCompensating(t *testing.T) {
	t.Parallel()
	w, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	ids := world.NewIDSource(time.Now, nil)
	held := func() string {
		id, step := ids.New(world.PrefixRun), ids.New(world.PrefixStep)
		for _, ev := range []world.EventInput{
			{Data: &world.RunCreated{WorkflowName: "trip"}}, {Data: &world.RunStarted{}},
			{CorrelationID: step, Data: &world.StepCreated{StepName: "book", Compensation: "unbook"}},
			{CorrelationID: step, Data: &world.StepStarted{Attempt: 1}},
			{CorrelationID: step, Data: &world.StepCompleted{Result: []byte(`1`)}},
			{Data: &world.RunHeld{ErrorCode: world.CodeReplayDivergence, Error: &world.ErrorData{Message: "diverged"}, Attempt: 1}},
		} {
			if _, err := w.Append(context.Background(), &world.AppendParams{RunID: id, Events: []world.EventInput{ev}}); err != nil {
				t.Fatalf("append %s: %v", ev.Type(), err)
			}
		}
		return id
	}
	c, err := client.New(client.Config{World: w})
	if err != nil {
		t.Fatal(err)
	}
	h, err := webui.New(webui.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	f := &fixture{t: t, w: w, client: c, srv: srv}
	for _, tc := range []struct {
		name       string
		ticked     bool
		compensate bool
	}{{"ticked", true, true}, {"unticked", false, false}} {
		id := held()
		if _, page := f.get("/runs/" + id); !strings.Contains(page, `id="fail-compensate"`) {
			t.Fatalf("%s: the fail form has no compensate box", tc.name)
		}
		form := url.Values{"csrf": {token}}
		if tc.ticked {
			form.Set("compensate", "on")
		}
		if code, _, body := f.post("/runs/"+id+"/fail", form, token, srv.URL); code != http.StatusSeeOther {
			t.Fatalf("%s: fail = %d\n%s", tc.name, code, body)
		}
		r, err := w.GetRun(context.Background(), &world.GetRunParams{RunID: id})
		if err != nil || r.Status != world.RunStatusFailed || r.Compensate != tc.compensate {
			t.Errorf("%s: run %s compensate %v, %v; want failed, compensate %v", tc.name, r.Status, r.Compensate, err, tc.compensate)
		}
	}
}
