package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/skeinflow/skein/world"
)

// detSource is a run's deterministic source of correlation IDs, hook tokens
// and randomness: seeded by the run ID, timestamped with the run ID's time.
// Replaying the same code draws the same values in the same order.
type detSource struct {
	ms      uint64
	entropy *ulid.MonotonicEntropy
	userIDs *ulid.MonotonicEntropy
	tokens  *rand.ChaCha8
	user    *rand.Rand
}

func seed(runID, purpose string) [32]byte {
	return sha256.Sum256([]byte("skein/" + purpose + "/" + runID))
}

func newDetSource(runID string) *detSource {
	t, err := world.IDTime(runID)
	if err != nil {
		t = time.Unix(0, 0)
	}
	us := seed(runID, "rand")
	return &detSource{
		ms:      ulid.Timestamp(t),
		entropy: ulid.Monotonic(rand.NewChaCha8(seed(runID, "ids")), 0),
		userIDs: ulid.Monotonic(rand.NewChaCha8(seed(runID, "user-ids")), 0),
		tokens:  rand.NewChaCha8(seed(runID, "tokens")),
		user:    rand.New(rand.NewPCG(binary.LittleEndian.Uint64(us[:8]), binary.LittleEndian.Uint64(us[8:16]))),
	}
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

// token returns a 21-character URL-safe token.
func (d *detSource) token() string {
	var b [21]byte
	var raw [21]byte
	_, _ = d.tokens.Read(raw[:])
	for i := range b {
		b[i] = tokenAlphabet[raw[i]&63]
	}
	return string(b[:])
}
