package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// RedactToken returns what a log shows of a hook token instead of the
// token: "sha256:" and the first 12 hex digits of its SHA-256. It tells
// requests for different hooks apart and matches a token an operator holds
// (hash it the same way), and resumes nothing: a webhook's token is the
// capability to resume it, and logs are read more widely than the hooks
// are. The webhook handlers log tokens only this way.
func RedactToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:6])
}

// redactTokenIn returns s with every occurrence of token replaced by
// RedactToken(token), for logged error messages about a hook.
func redactTokenIn(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, RedactToken(token))
}
