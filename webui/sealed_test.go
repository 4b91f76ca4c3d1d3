package webui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/webui"
	"github.com/skeinflow/skein/world"
)

// TestSealedRunActionsRefused: a dashboard that cannot open a sealed run's
// payloads (no key: a World without encryption, or one that leaves what
// its keys do not open sealed) refuses to rerun the run (it would copy the
// envelope into a new run that could never read it) and to resume its
// hook (the payload would be stored in clear), says why, and writes
// nothing. Before, both were committed.
func TestSealedRunActionsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	k1, err := encrypt.NewLocalKeys("k1", map[string][]byte{"k1": bytes.Repeat([]byte{1}, encrypt.DataKeySize)})
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := encrypt.Wrap(lw, encrypt.Config{Keys: k1})
	const done, waiting, hook = "wrun_01JABCDEFGHJKMNPQRSTVWXYZ1", "wrun_01JABCDEFGHJKMNPQRSTVWXYZ2", "hook_01JABCDEFGHJKMNPQRSTVWXYZ1"
	for _, c := range []struct {
		run string
		evs []world.EventInput
	}{
		{done, []world.EventInput{{Data: &world.RunCreated{WorkflowName: "alpha", Input: json.RawMessage(`{"card":"4242"}`)}}, {Data: &world.RunCancelled{}}}},
		{waiting, []world.EventInput{{Data: &world.RunCreated{WorkflowName: "alpha", Input: json.RawMessage(`1`)}}, {Data: &world.RunStarted{}},
			{CorrelationID: hook, Data: &world.HookCreated{Token: "approve-1"}}}},
	} {
		for _, ev := range c.evs {
			if _, err := sealed.Append(ctx, &world.AppendParams{RunID: c.run, Events: []world.EventInput{ev}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	k9, _ := encrypt.NewLocalKeys("k9", map[string][]byte{"k9": bytes.Repeat([]byte{9}, encrypt.DataKeySize)})
	otherKeys, _ := encrypt.Wrap(lw, encrypt.Config{Keys: k9, LeaveSealed: true})
	for name, w := range map[string]world.World{"no encryption": lw, "no key that opens it": otherKeys} {
		t.Run(name, func(t *testing.T) {
			c, err := client.New(client.Config{World: w})
			if err != nil {
				t.Fatal(err)
			}
			h, err := webui.New(webui.Config{Client: c})
			if err != nil {
				t.Fatal(err)
			}
			post := func(path string, form url.Values) *httptest.ResponseRecorder {
				form.Set("csrf", token)
				req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:1"+path, strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Origin", "http://127.0.0.1:1")
				req.AddCookie(&http.Cookie{Name: "skein_csrf", Value: token})
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec
			}
			before := counts(t, lw, waiting)
			if rec := post("/runs/"+done+"/rerun", url.Values{}); rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), `encrypted with key &#34;k1&#34;`) {
				t.Errorf("rerun of a sealed run = %d, want 409 naming the key:\n%s", rec.Code, rec.Body.String())
			}
			if rec := post("/runs/"+waiting+"/resume", url.Values{"hook": {hook}, "payload": {"5"}}); rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "stored in clear") {
				t.Errorf("hook resume into a sealed run = %d, want 409 saying why:\n%s", rec.Code, rec.Body.String())
			}
			if after := counts(t, lw, waiting); after != before {
				t.Errorf("runs and events %v after the refusals, want %v: nothing written", after, before)
			}
		})
	}
}

// counts is how many runs the store holds and how many events run has.
func counts(t *testing.T, w world.World, run string) [2]int {
	t.Helper()
	runs, err := w.ListRuns(context.Background(), &world.ListRunsParams{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := runrules.AllEvents(context.Background(), w, run)
	if err != nil {
		t.Fatal(err)
	}
	return [2]int{len(runs.Items), len(evs)}
}

// TestSealedRunPageSaysWhy: a run page read by a dashboard that cannot
// open the run's payloads shows, in place of its input and of its stream's
// text, which key they need and, when its World can say (an encrypting
// World that leaves what its keys do not open sealed), why that World's
// keys did not open them; the page is served, never an error.
func TestSealedRunPageSaysWhy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	seal := func(b byte, leave bool) world.World {
		keys, err := encrypt.NewLocalKeys("k1", map[string][]byte{"k1": bytes.Repeat([]byte{b}, encrypt.DataKeySize)})
		if err != nil {
			t.Fatal(err)
		}
		ew, err := encrypt.Wrap(lw, encrypt.Config{Keys: keys, LeaveSealed: leave})
		if err != nil {
			t.Fatal(err)
		}
		return ew
	}
	sealed := seal(1, false)
	const run = "wrun_01JABCDEFGHJKMNPQRSTVWXYZ3"
	for _, d := range []world.EventData{&world.RunCreated{WorkflowName: "alpha", Input: json.RawMessage(`{"card":"4242"}`)}, &world.RunStarted{}} {
		if _, err := sealed.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{Data: d}}}); err != nil {
			t.Fatal(err)
		}
	}
	// "user" and the leading 'b' are the SDK's default stream and its tag
	// for a chunk of bytes.
	if err := sealed.WriteStream(ctx, &world.WriteStreamParams{RunID: run, Name: "user", Chunks: [][]byte{[]byte("bcard 4242 streamed")}, Framing: 1}); err != nil {
		t.Fatal(err)
	}
	const (
		noKey    = `[encrypted with key &#34;k1&#34;; no key to decrypt it]`
		wrongKey = `[encrypted with key &#34;k1&#34;; the key given with that ID does not open it`
	)
	for name, c := range map[string]struct {
		w    world.World
		note string
	}{
		"no encryption": {lw, noKey},
		"a wrong key":   {seal(2, true), wrongKey},
	} {
		t.Run(name, func(t *testing.T) {
			cl, err := client.New(client.Config{World: c.w})
			if err != nil {
				t.Fatal(err)
			}
			h, err := webui.New(webui.Config{Client: cl})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:1/runs/"+run, nil))
			page := rec.Body.String()
			if rec.Code != http.StatusOK || strings.Contains(page, "4242") {
				t.Fatalf("run page = %d, want 200 without the plaintext:\n%s", rec.Code, page)
			}
			if n := strings.Count(page, c.note); n < 2 {
				t.Errorf("run page shows %q %d times, want it for the input and for the stream:\n%s", c.note, n, page)
			}
			if c.note == wrongKey && strings.Contains(page, noKey) {
				t.Errorf("run page read with a wrong key says there is no key:\n%s", page)
			}
		})
	}
}
