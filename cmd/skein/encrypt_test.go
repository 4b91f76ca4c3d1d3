package main

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
)

// TestEncryptedStore: runs show shows a sealed store's payloads decrypted
// with -keys (or $SKEIN_ENCRYPTION_KEYS' format), and without the key says
// which key they need instead of printing ciphertext.
func TestEncryptedStore(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "sealed.db")
	keyText := "k7=" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("7", encrypt.DataKeySize)))
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
	reg := workflow.NewRegistry()
	if err := reg.Register(square); err != nil {
		t.Fatal(err)
	}
	echo := workflow.New("echo-secret", func(ctx workflow.Context, s string) (string, error) { return s + "!", nil })
	if err := reg.Register(echo); err != nil {
		t.Fatal(err)
	}
	worker, err := worker.New(worker.Config{World: w, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = worker.Run(wctx) }()
	run, err := echo.Start(ctx, worker.Client(), "card 4242")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
	stop()
	<-stopped
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}

	r := cli("-db", db, "runs", "show", run.ID())
	r.expect(t, 0, `[encrypted with key "k7"; no key to decrypt it] (pass -keys`)
	if strings.Contains(r.out, "4242") {
		t.Errorf("shown in clear without the key:\n%s", r.out)
	}
	cli("-db", db, "-keys", keyText, "runs", "show", run.ID()).expect(t, 0, `"card 4242"`, `"card 4242!"`)
	// Without the key, or with another, skein neither writes nor exports
	// what it cannot open: a rerun would copy ciphertext into a new run, an
	// export would not replay.
	otherKey := "k9=" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("9", encrypt.DataKeySize)))
	for _, keys := range [][]string{nil, {"-keys", otherKey}} {
		cli(append(append([]string{"-db", db}, keys...), "runs", "show", run.ID())...).expect(t, 0, `key "k7"`)
		cli(append(append([]string{"-db", db}, keys...), "runs", "rerun", run.ID())...).expect(t, 1, `encrypted with key "k7"`, "-keys")
		cli(append(append([]string{"-db", db}, keys...), "runs", "export", run.ID())...).expect(t, 1, `encrypted with key "k7"`)
	}
	cli("-db", db, "-keys", keyText, "runs", "rerun", run.ID()).expect(t, 0, "started run", "sealed with the key given to skein: only workers holding that key run it")
	cli("-db", db, "runs", "show", run.ID(), "-keys", "k7=short").expect(t, 2, "-keys", `key "k7" is not 32 bytes`)
}

var (
	sayStep = workflow.NewStep("say", func(ctx context.Context, s string) (string, error) {
		_, err := io.WriteString(workflow.Writer(ctx, ""), s+"\n")
		return s, err
	})
	sayFlow = workflow.New("say-secret", func(ctx workflow.Context, s string) (string, error) { return sayStep.Call(ctx, s) })
)

// TestWrongKey: given a key with the run's key ID but other bytes, runs
// show, streams read, runs rerun and the dashboard say that the key given
// does not open the data, not that there is no key.
func TestWrongKey(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "sealed.db")
	right := "k1=" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("1", encrypt.DataKeySize)))
	wrong := "k1=" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("2", encrypt.DataKeySize)))
	keys, err := encrypt.ParseLocalKeys(right)
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
	reg := workflow.NewRegistry()
	if err := reg.Register(sayFlow, sayStep); err != nil {
		t.Fatal(err)
	}
	worker, err := worker.New(worker.Config{World: w, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = worker.Run(wctx) }()
	run, err := sayFlow.Start(ctx, worker.Client(), "card 4242")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
	stop()
	<-stopped
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}

	cli("-db", db, "-keys", right, "streams", "read", run.ID()).expect(t, 0, "card 4242")
	r := cli("-db", db, "-keys", wrong, "runs", "show", run.ID())
	r.expect(t, 0, `[encrypted with key "k1"; the key given with that ID does not open it`, "check -keys")
	if strings.Contains(r.out, "no key to decrypt") || strings.Contains(r.out, "4242") {
		t.Errorf("runs show with a wrong key:\n%s", r.out)
	}
	r = cli("-db", db, "-keys", wrong, "streams", "read", run.ID())
	r.expect(t, 1, "the keys given do not open it", "a wrong key for this ID")
	if strings.Contains(r.err, "no key to open it") {
		t.Errorf("streams read with a wrong key says there is no key:\n%s", r.err)
	}
	cli("-db", db, "-keys", wrong, "runs", "rerun", run.ID()).expect(t, 1, "the key given does not open them")
	// No key at all is still said so.
	cli("-db", db, "-keys", "k9="+strings.TrimPrefix(right, "k1="), "runs", "show", run.ID()).
		expect(t, 0, `[encrypted with key "k1"; no key to decrypt it]`)

	base, _ := startUI(t, "-db", db, "-keys", wrong)
	resp, err := http.Get(base + "/runs/" + run.ID())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if page := string(body); !strings.Contains(page, "the key given with that ID does not open it") || strings.Contains(page, "no key to decrypt") {
		t.Errorf("the dashboard with a wrong key:\n%s", page)
	}
}
