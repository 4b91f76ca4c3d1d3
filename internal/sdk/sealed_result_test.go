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

// TestSealedResultKeyUnavailable: a Client whose World cannot open an
// encrypted run's output (no encryption at all, or a keyring without the
// run's key, leaving payloads sealed) gets an error matching
// world.ErrKeyUnavailable naming the run and the key from Result, never
// the envelope decoded as the output (a struct with none of its fields
// and no error, as a new user found); a Client with the key gets the
// output.
func TestSealedResultKeyUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	keyring := func(b byte) encrypt.Keyring {
		k, err := encrypt.NewLocalKeys("k1", map[string][]byte{"k1": bytes.Repeat([]byte{b}, encrypt.DataKeySize)})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	sealed, err := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(1)})
	if err != nil {
		t.Fatal(err)
	}
	const run = "wrun_01JABCDEFGHJKMNPQRSTVWXYZ5"
	if _, err := sealed.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "order", Input: json.RawMessage(`{"card":"4242"}`)}},
		{Data: &world.RunStarted{}},
		{Data: &world.RunCompleted{Output: json.RawMessage(`{"orderId":"o-1"}`)}},
	}}); err != nil {
		t.Fatal(err)
	}
	type order struct {
		OrderID string `json:"orderId"`
	}
	wrongKey, err := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(2), LeaveSealed: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		w    world.World
	}{{"no encryption", lw}, {"another key, left sealed", wrongKey}} {
		c, err := sdk.NewClient(sdk.ClientConfig{World: tc.w})
		if err != nil {
			t.Fatal(err)
		}
		for _, out := range []any{&order{}, &json.RawMessage{}, &map[string]any{}} {
			err := c.Result(ctx, run, out)
			var k interface{ KeyUnavailable() (runID, keyID string) }
			if !errors.Is(err, world.ErrKeyUnavailable) || !errors.As(err, &k) || strings.Contains(err.Error(), "skein.sealed") {
				t.Fatalf("%s: Result into %T = %v (out %+v); want an error matching world.ErrKeyUnavailable", tc.name, out, err, out)
			}
			if r, key := k.KeyUnavailable(); r != run || key != "k1" {
				t.Fatalf("%s: Result = %v: names run %q, key %q; want %s, k1", tc.name, err, r, key, run)
			}
		}
	}
	c, err := sdk.NewClient(sdk.ClientConfig{World: sealed})
	if err != nil {
		t.Fatal(err)
	}
	var got order
	if err := c.Result(ctx, run, &got); err != nil || got.OrderID != "o-1" {
		t.Fatalf("with the key: Result = %+v, %v; want o-1", got, err)
	}
}
