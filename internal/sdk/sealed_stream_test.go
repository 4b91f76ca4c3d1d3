package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// TestSealedStreamKeyUnavailable: a Client whose World holds no key
// (here, no encryption at all) reading a sealed stream, live or page by
// page, gets an error matching world.ErrKeyUnavailable that names the run
// and the key, never the envelope as data.
func TestSealedStreamKeyUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	keys, err := encrypt.NewLocalKeys("k1", map[string][]byte{"k1": bytes.Repeat([]byte{1}, encrypt.DataKeySize)})
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := encrypt.Wrap(lw, encrypt.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	const run = "wrun_01JABCDEFGHJKMNPQRSTVWXYZ4"
	if _, err := sealed.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "alpha", Input: json.RawMessage(`1`)}},
	}}); err != nil {
		t.Fatal(err)
	}
	// "user" and the leading 'b' are the SDK's default stream and its tag
	// for a chunk of bytes.
	if err := sealed.WriteStream(ctx, &world.WriteStreamParams{RunID: run, Name: "user", Chunks: [][]byte{[]byte("bcard 4242")}, Framing: 1}); err != nil {
		t.Fatal(err)
	}
	c, err := sdk.NewClient(sdk.ClientConfig{World: lw})
	if err != nil {
		t.Fatal(err)
	}
	check := func(how string, err error) {
		t.Helper()
		var k interface{ KeyUnavailable() (runID, keyID string) }
		if !errors.Is(err, world.ErrKeyUnavailable) || !errors.As(err, &k) || strings.Contains(err.Error(), "4242") {
			t.Fatalf("%s = %v; want an error matching world.ErrKeyUnavailable", how, err)
		}
		if r, key := k.KeyUnavailable(); r != run || key != "k1" {
			t.Fatalf("%s = %v: names run %q, key %q; want %s, k1", how, err, r, key, run)
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got error
	for ch, err := range c.ReadStream(rctx, run, sdk.StreamOptions{}) {
		if err == nil {
			t.Fatalf("ReadStream yielded chunk %q, want an error", ch.Data)
		}
		got = err
		break
	}
	check("ReadStream", got)
	_, err = c.ReadStreamPage(ctx, run, sdk.StreamOptions{})
	check("ReadStreamPage", err)
}
