package encrypt_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// TestSealedReason: a reader that leaves payloads sealed tells a key ID it
// has no key for from a key with that ID that does not open them, in
// SealedReason (ErrNoSuchKey, ErrWrongKey) and in its Describe.
func TestSealedReason(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	const run = "wrun_01JABCDEFGHJKMNPQRSTVWXYZ2"
	writer, _ := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(t, "k1", map[string][]byte{"k1": key(1)})})
	if _, err := writer.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "wf", Input: json.RawMessage(`"card 4242"`)}}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		keys   map[string][]byte
		reason error
		says   string
	}{
		{"no key with the ID", map[string][]byte{"k9": key(9)}, encrypt.ErrNoSuchKey, `[encrypted with key "k1"; no key to decrypt it]`},
		{"other bytes under the ID", map[string][]byte{"k1": key(2)}, encrypt.ErrWrongKey, "the key given with that ID does not open it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			current := ""
			for id := range tc.keys {
				current = id
			}
			rw, _ := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(t, current, tc.keys), LeaveSealed: true})
			reader := rw.(sealReader) // what Wrap documents for tools
			if err := reader.SealedReason("k1"); err != nil {
				t.Fatalf("SealedReason before any read = %v", err)
			}
			r, err := reader.GetRun(ctx, &world.GetRunParams{RunID: run})
			if err != nil {
				t.Fatal(err)
			}
			if why := reader.SealedReason("k1"); !errors.Is(why, tc.reason) || !errors.Is(why, world.ErrKeyUnavailable) {
				t.Errorf("SealedReason = %v, want %v", why, tc.reason)
			}
			if got := reader.Describe(r.Input); !strings.Contains(got, tc.says) || strings.Contains(got, "4242") {
				t.Errorf("Describe = %q, want %q in it", got, tc.says)
			}
			if got := reader.Describe([]byte(`"plain"`)); got != `"plain"` {
				t.Errorf("Describe of a payload in clear = %q", got)
			}
		})
	}
}

// sealReader is what Wrap documents of its World for tools that show
// payloads left sealed.
type sealReader interface {
	world.World
	SealedReason(keyID string) error
	Describe(payload []byte) string
	DescribeKey(keyID string) string
}
