package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
)

// RedactToken returns what logs and messages show of a hook token instead
// of the token: "sha256:" and the first 12 hex digits of its SHA-256 (see
// internal/redact).
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

// WebhookToken returns the token a webhook request's path names: its last
// segment, unescaped.
func WebhookToken(path string) string {
	token := path[strings.LastIndexByte(path, '/')+1:]
	if t, err := url.PathUnescape(token); err == nil {
		token = t
	}
	return token
}

// RedactWebhookURL returns u as a webhook's Request records it: its last
// path segment, the token, replaced by RedactToken's digest. A segment that
// is already such a digest is left as it is.
func RedactWebhookURL(u *url.URL) string {
	token := WebhookToken(u.Path)
	if token == "" || isRedacted(token) {
		return u.String()
	}
	c := *u
	c.Path = c.Path[:strings.LastIndexByte(c.Path, '/')+1] + RedactToken(token)
	c.RawPath = ""
	return c.String()
}

// isRedacted reports whether s is what RedactToken shows.
func isRedacted(s string) bool {
	hexPart, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(hexPart) != 12 {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil
}
