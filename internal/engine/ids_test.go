package engine

import (
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// tokensFromRunID recomputes n tokens the way anyone who knows only the run
// ID could: a generator seeded by a hash of the run ID (the derivation runs
// without a secret use), read 21 or 22 bytes at a time.
func tokensFromRunID(runID string, n, size int) []string {
	g := rand.NewChaCha8(sha256.Sum256([]byte("skein/tokens/" + runID)))
	out := make([]string, n)
	for i := range out {
		raw := make([]byte, size)
		_, _ = g.Read(raw)
		for j, c := range raw {
			raw[j] = tokenAlphabet[c&63]
		}
		out[i] = string(raw)
	}
	return out
}

func TestTokensNotDerivableFromRunID(t *testing.T) {
	t.Parallel()
	const runID = "wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T"
	d := newDetSource(runID).withSecret(runID, NewRunSecret())
	var got []string
	for range 8 {
		tok := d.token()
		if len(tok) != TokenLength {
			t.Fatalf("token %q: %d characters, want %d", tok, len(tok), TokenLength)
		}
		got = append(got, tok)
	}
	for _, size := range []int{legacyTokenLength, TokenLength} {
		for _, forged := range tokensFromRunID(runID, 8, size) {
			for _, tok := range got {
				if tok == forged || strings.HasPrefix(tok, forged[:8]) {
					t.Fatalf("token %q recomputed from the run ID alone (%q)", tok, forged)
				}
			}
		}
	}
	if d.tag("skein-child:"+runID+":1") == "" {
		t.Error("a run with a secret has no secret tag")
	}
}

func TestTokensPerRunSecret(t *testing.T) {
	t.Parallel()
	ids := world.NewIDSource(nil, nil)
	run1, run2 := ids.New(world.PrefixRun), ids.New(world.PrefixRun)
	s1, s2 := NewRunSecret(), NewRunSecret()
	if len(s1) != RunSecretSize || string(s1) == string(s2) {
		t.Fatalf("secrets %x and %x", s1, s2)
	}
	tests := []struct {
		name       string
		a, b       *detSource
		same       bool
		aTag, bTag string
	}{
		{"replay: same run, same secret", newDetSource(run1).withSecret(run1, s1), newDetSource(run1).withSecret(run1, s1), true, "x", "x"},
		{"same run, other secret", newDetSource(run1).withSecret(run1, s1), newDetSource(run1).withSecret(run1, s2), false, "x", "x"},
		{"other run, same secret", newDetSource(run1).withSecret(run1, s1), newDetSource(run2).withSecret(run2, s1), false, "x", "x"},
		{"other tag label", newDetSource(run1).withSecret(run1, s1), newDetSource(run1).withSecret(run1, s1), true, "x", "y"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for i := range 20 {
				x, y := tc.a.token(), tc.b.token()
				if (x == y) != tc.same {
					t.Fatalf("token %d: %q and %q, want same=%v", i, x, y, tc.same)
				}
			}
			x, y := tc.a.tag(tc.aTag), tc.b.tag(tc.bTag)
			if (x == y) != (tc.same && tc.aTag == tc.bTag) || len(x) != TokenLength {
				t.Fatalf("tags %q and %q", x, y)
			}
		})
	}
}

// TestLegacyTokens holds a run created before run secrets to the tokens it
// drew then, so that it replays as it ran.
func TestLegacyTokens(t *testing.T) {
	t.Parallel()
	const runID = "wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T"
	d := newDetSource(runID).withSecret(runID, nil)
	want := []string{"gq0fLwBvcjwgYPI2OsWdR", "yUFzWdl-91hRI6okBRaak", "ruvrGM6vFWXKGmsnuYRwf"}
	for i, w := range want {
		if got := d.token(); got != w {
			t.Errorf("token %d = %q, want %q", i, got, w)
		}
	}
	if want := tokensFromRunID(runID, 3, legacyTokenLength); want[0] != "gq0fLwBvcjwgYPI2OsWdR" {
		t.Fatal("the recomputation does not follow the legacy derivation")
	}
	if tag := d.tag("x"); tag != "" {
		t.Errorf("a run without a secret has tag %q", tag)
	}
}

// idTime reads the time an IDSource encoded, and refuses an ID that is
// not a prefixed ULID with ErrInvalid.
func TestIDTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 6, 7, 8, 9, 123_000_000, time.UTC)
	id := world.NewIDSource(func() time.Time { return at }, nil).New(world.PrefixWait)
	got, err := idTime(id)
	if err != nil || !got.Equal(at) {
		t.Fatalf("IDTime(%s) = %v, %v; want %v", id, got, err, at)
	}
	for _, bad := range []string{"noprefix", "wrun_nope", "wrun_" + strings.Repeat("Z", 26)} {
		if _, err := idTime(bad); !errors.Is(err, world.ErrInvalid) {
			t.Errorf("IDTime(%q): %v, want ErrInvalid", bad, err)
		}
	}
}
