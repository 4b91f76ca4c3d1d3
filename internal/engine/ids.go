package engine

import (
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/skeinflow/skein/world"
)

// detSource is a run's deterministic source of correlation IDs, hook tokens
// and randomness, timestamped with the run ID's time. Replaying the same
// code draws the same values in the same order.
//
// Correlation IDs, Context.NewID and Context.Rand are seeded by the run ID
// alone: they are not secrets, and anyone who knows the run ID can compute
// them. Hook tokens are capabilities (whoever holds a webhook's token can
// resume it over a public URL), so withSecret seeds them by the run's
// secret as well.
type detSource struct {
	ms       uint64
	entropy  *ulid.MonotonicEntropy
	userIDs  *ulid.MonotonicEntropy
	tokens   *rand.ChaCha8
	tokenLen int
	user     *rand.Rand
	secret   []byte // the run's secret; nil for a run created before them
	runID    string
}

// RunSecretSize is the size in bytes of the secret NewRunSecret draws.
const RunSecretSize = 32

// TokenLength is the length of a generated token in a run with a secret:
// 22 characters of a 64-symbol alphabet carry 132 random bits. Runs
// without a secret keep legacyTokenLength.
const (
	TokenLength       = 22
	legacyTokenLength = 21
)

// NewRunSecret draws a run's secret (world.RunCreated.Secret) from
// crypto/rand.
func NewRunSecret() []byte {
	b := make([]byte, RunSecretSize)
	_, _ = crand.Read(b) // never fails: crypto/rand aborts the program instead
	return b
}

func seed(runID, purpose string) [32]byte {
	return sha256.Sum256([]byte("skein/" + purpose + "/" + runID))
}

func newDetSource(runID string) *detSource {
	t, err := idTime(runID)
	if err != nil {
		t = time.Unix(0, 0)
	}
	us := seed(runID, "rand")
	return &detSource{
		ms:      ulid.Timestamp(t),
		entropy: ulid.Monotonic(rand.NewChaCha8(seed(runID, "ids")), 0),
		userIDs: ulid.Monotonic(rand.NewChaCha8(seed(runID, "user-ids")), 0),
		// Tokens from the run ID alone: only for runs without a secret,
		// created before secrets existed, so that they replay as they ran.
		tokens:   rand.NewChaCha8(seed(runID, "tokens")),
		tokenLen: legacyTokenLength,
		user:     rand.New(rand.NewPCG(binary.LittleEndian.Uint64(us[:8]), binary.LittleEndian.Uint64(us[8:16]))),
	}
}

// withSecret seeds d's tokens by the run's secret too (HMAC-SHA256 keyed by
// it) and lengthens them to TokenLength. An empty secret (a run created
// before secrets) leaves d as it is.
func (d *detSource) withSecret(runID string, secret []byte) *detSource {
	if len(secret) == 0 {
		return d
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("skein/tokens/" + runID))
	d.tokens = rand.NewChaCha8([32]byte(m.Sum(nil)))
	d.tokenLen = TokenLength
	d.secret, d.runID = secret, runID
	return d
}

// tag returns TokenLength characters derived from the run's secret and
// label (HMAC-SHA256), for a token built from public parts to carry a part
// nobody can compute; "" for a run without a secret. Unlike token, it does
// not draw from the run's token sequence.
func (d *detSource) tag(label string) string {
	if len(d.secret) == 0 {
		return ""
	}
	m := hmac.New(sha256.New, d.secret)
	m.Write([]byte("skein/tag/" + d.runID + "/" + label))
	sum := m.Sum(nil)
	b := make([]byte, TokenLength)
	for i := range b {
		b[i] = tokenAlphabet[sum[i]&63] // the low 6 bits of 22 MAC bytes: 132 bits
	}
	return string(b)
}

// id returns prefix and the next ULID.
func (d *detSource) id(prefix string) string {
	u, err := ulid.New(d.ms, d.entropy)
	if err != nil {
		// Overflow of the monotonic entropy within one millisecond: move
		// to the next millisecond, still deterministically.
		d.ms++
		u = ulid.MustNew(d.ms, d.entropy)
	}
	return prefix + u.String()
}

// userID returns a ULID from the source workflow code draws from, kept apart
// from the correlation IDs so that drawing one does not shift them.
func (d *detSource) userID(ms uint64) string {
	u, err := ulid.New(ms, d.userIDs)
	if err != nil {
		u = ulid.MustNew(ms+1, d.userIDs)
	}
	return u.String()
}

const tokenAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"

// token returns a URL-safe token of d.tokenLen characters, six uniformly
// random bits each (ChaCha8 is a cryptographically strong generator, so a
// token says nothing about the run's other tokens).
func (d *detSource) token() string {
	raw := make([]byte, d.tokenLen)
	_, _ = d.tokens.Read(raw)
	for i, c := range raw {
		raw[i] = tokenAlphabet[c&63]
	}
	return string(raw)
}

// SecretTag returns a string derived from the run's secret and label, for
// a token made of public parts (a child run's notification token) to carry
// a part nobody can compute from them; "" for a run created before run
// secrets existed. It is the same on replay and draws nothing from the
// run's token sequence.
func (c *Context) SecretTag(label string) string { return c.r.det.tag(label) }

// idTime returns the creation time encoded in a prefixed ULID.
func idTime(id string) (time.Time, error) {
	i := strings.IndexByte(id, '_')
	if i < 0 {
		return time.Time{}, fmt.Errorf("%w: id %q has no prefix", world.ErrInvalid, id)
	}
	u, err := ulid.ParseStrict(id[i+1:])
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: id %q: %v", world.ErrInvalid, id, err)
	}
	return ulid.Time(u.Time()), nil
}
