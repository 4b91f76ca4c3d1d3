package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// RedactToken returns what logs and messages show of a hook token instead
// of the token: "sha256:" and the first 12 hex digits of its SHA-256 (see
// workflow.RedactToken).
func RedactToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:6])
}

// quotedToken is a hook token as a message about the run shows it: a
// webhook's redacted (its token is the capability to call it, and held
// runs' messages reach logs, RunInfo and the CLI), another quoted.
func quotedToken(token string, webhook bool) string {
	if webhook {
		return RedactToken(token)
	}
	return fmt.Sprintf("%q", token)
}
