package encrypt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/skeinflow/skein/internal/knobs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// marker is what the test looks for in the store: it appears in every kind
// of payload, and must never appear in the file.
const marker = "SECRET-MARKER-7Q"

var (
	greet = workflow.NewStep("greet", func(ctx context.Context, name string) (string, error) {
		w := workflow.Writer(ctx, "log")
		if _, err := w.Write([]byte("greeting " + name)); err != nil {
			return "", err
		}
		return "hello " + name, nil
	})
	secretFlow = workflow.New("secret", func(ctx workflow.Context, name string) (string, error) {
		hello, err := greet.Call(ctx, name)
		if err != nil {
			return "", err
		}
		h := workflow.NewHook[string](ctx, workflow.HookOptions{Token: "approve-" + strings.ToLower(name[:6])})
		note, err := h.Receive(ctx)
		if err != nil {
			return "", err
		}
		return hello + " / " + note, nil
	})
)

// serve runs a worker on w until the test ends.
func serve(t *testing.T, w world.World, consumer world.Consumer) *worker.Worker {
	t.Helper()
	reg := workflow.NewRegistry()
	if err := reg.Register(secretFlow, greet); err != nil {
		t.Fatal(err)
	}
	wk, err := worker.New(worker.Config{World: w, Consumer: consumer, Registry: reg}, knobs.WithPollWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = wk.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return wk
}

// TestNoPlaintextInTheStore: a run whose input, step result, hook payload,
// stream and output all hold the marker completes and reads back in clear
// through the Client, while the store file never holds the marker; a
// reader with the key rotated away still reads it; one with a wrong key
// gets a *KeyError naming the key.
func TestNoPlaintextInTheStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	lw, err := localworld.Open(localworld.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	w, err := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(t, "k1", map[string][]byte{"k1": key(1)})})
	if err != nil {
		t.Fatal(err)
	}
	wk := serve(t, w, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := secretFlow.Start(ctx, wk.Client(), marker)
	if err != nil {
		t.Fatal(err)
	}
	token := "approve-" + strings.ToLower(marker[:6])
	for {
		if _, err := wk.Client().ResumeHook(ctx, token, "ok "+marker); err == nil {
			break
		} else if !errors.Is(err, world.ErrNotFound) || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	got, err := run.Result(ctx)
	if want := "hello " + marker + " / ok " + marker; err != nil || got != want {
		t.Fatalf("result %q, %v; want %q", got, err, want)
	}
	var chunks []string
	for c, err := range wk.Client().ReadStream(ctx, run.ID(), client.StreamOptions{Namespace: "log"}) {
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, string(c.Data))
	}
	if len(chunks) != 1 || chunks[0] != "greeting "+marker {
		t.Errorf("stream = %q", chunks)
	}
	info, err := wk.Client().GetRun(ctx, run.ID())
	if err != nil || !strings.Contains(string(info.Input), marker) {
		t.Fatalf("GetRun: input %s, %v", info.Input, err)
	}
	// Underneath, every payload is sealed: the events hold no marker.
	evs, err := lw.ListEvents(ctx, &world.ListEventsParams{RunID: run.ID(), Pagination: world.Pagination{Limit: 100}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		if b, _ := json.Marshal(ev); bytes.Contains(b, []byte(marker)) {
			t.Errorf("%s holds the marker in clear: %s", ev.Type(), b)
		}
	}
	raw, _ := lw.GetRun(ctx, &world.GetRunParams{RunID: run.ID()})
	if id, ok := encrypt.SealedKeyID(raw.Input); !ok || id != "k1" {
		t.Errorf("the stored input is not sealed with k1: %s", raw.Input)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(file, []byte(marker)) || !bytes.Contains(file, []byte(run.ID())) {
		t.Fatalf("the store file holds the marker in clear (or not the run)")
	}

	// Reopened with k1 rotated out of current, the run still reads; with a
	// wrong k1, it is a KeyError naming k1.
	for _, tc := range []struct {
		name  string
		keys  encrypt.Keyring
		wantK string
	}{
		{"rotated", keyring(t, "k2", map[string][]byte{"k1": key(1), "k2": key(2)}), ""},
		{"wrong key", keyring(t, "k1", map[string][]byte{"k1": key(9)}), "k1"},
		{"missing key", keyring(t, "k2", map[string][]byte{"k2": key(2)}), "k1"},
	} {
		lw, err := localworld.Open(localworld.Config{Path: path, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		w, _ := encrypt.Wrap(lw, encrypt.Config{Keys: tc.keys})
		r, err := w.GetRun(ctx, &world.GetRunParams{RunID: run.ID()})
		var ke *encrypt.KeyError
		switch {
		case tc.wantK == "" && (err != nil || !strings.Contains(string(r.Output), marker)):
			t.Errorf("%s: GetRun = %v", tc.name, err)
		case tc.wantK != "" && (!errors.As(err, &ke) || ke.KeyID != tc.wantK || ke.RunID != run.ID()):
			t.Errorf("%s: GetRun = %v; want a *KeyError naming key %s and the run", tc.name, err, tc.wantK)
		}
		_ = lw.Close()
	}
}
