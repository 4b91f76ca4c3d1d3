package runrules

import (
	"crypto/sha256"
	"encoding/hex"
)

// digestBytes is how many bytes of the SHA-256 sum DigestInput keeps: 64
// bits tell two different inputs apart with certainty for all practical
// purposes, at 16 characters per step_created.
const digestBytes = 8

// DigestInput returns the digest of an operation's encoded input recorded in
// world.StepCreated.InputDigest: the first 8 bytes of its SHA-256 sum, in
// lowercase hex. The bytes are hashed as given, so the same value must be
// encoded the same way each time (encoding/json sorts map keys).
func DigestInput(input []byte) string {
	sum := sha256.Sum256(input)
	return hex.EncodeToString(sum[:digestBytes])
}
