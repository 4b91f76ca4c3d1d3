package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/internal/sealmark"
	"github.com/skeinflow/skein/world"
)

// What the CLI prints of user-controlled strings. Names, tokens, keys,
// metadata and messages come from code and input data; printed raw, a
// newline or tab breaks a table and an escape sequence reaches the
// operator's terminal. Tables and text show them through these functions;
// JSON output (-json, runs events) is exact, escaped by JSON itself.

// printable reports whether s is valid UTF-8 holding only printable
// characters and spaces (no control, format or invalid bytes).
func printable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || (r != ' ' && !strconv.IsPrint(r)) {
			return false
		}
	}
	return true
}

// safeName returns an identifier (a workflow or step name, a token, a
// stream name, an idempotency key) as is when it is printable, else Go-quoted
// ("esc\x1b[31mred"), so that the quoted form is unambiguous and visible.
func safeName(s string) string {
	if printable(s) {
		return s
	}
	return strconv.Quote(s)
}

// safeText returns free text (an error message, a reason, JSON shown in a
// field) with each unprintable character written as its Go escape (\n,
// \x1b, \u202e) and nothing else changed: one line, no escape sequences.
func safeText(s string) string {
	if printable(s) {
		return s
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, n := utf8.DecodeRuneInString(s[i:])
		w = n
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i]), 16))
		case r == ' ' || strconv.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// safeLines is safeText line by line, for the CLI's own multi-line error
// messages that may quote user text.
func safeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = safeText(l)
	}
	return strings.Join(lines, "\n")
}

// shownToken is what tables show of a hook's token: a webhook's token is
// the only credential its URL needs (logs show it only redacted), so it is
// shown as redact.Token unless reveal (-show-tokens) is set; a plain
// hook's token is what "skein hooks resume" takes, and is shown.
func shownToken(token string, webhook, reveal bool) string {
	if webhook && !reveal {
		return redact.Token(token)
	}
	return safeName(token)
}

// shownPayload is a payload as the CLI shows it: as stored, or, when it is
// sealed and no key opened it, a note naming the key it needs and why the
// keys given (-keys, -kms-key) did not open it.
func (e *env) shownPayload(b []byte) string {
	kid, ok := encrypt.SealedKeyID(b)
	if !ok {
		return string(b)
	}
	ew := e.sealer()
	if ew == nil {
		return encrypt.Describe(b) + " (pass -keys, or -kms-key for a stack)"
	}
	why := ew.SealedReason(kid)
	switch {
	case errors.Is(why, encrypt.ErrWrongKey):
		return ew.Describe(b) + " (check -keys: the program that wrote it had other key bytes under that ID)"
	case why == nil || errors.Is(why, encrypt.ErrNoSuchKey):
		return ew.Describe(b) + " (pass the key with that ID in -keys, or -kms-key for a stack)"
	}
	return ew.Describe(b)
}

// sealReader is what the commands ask of the encrypting World they read
// through (encrypt.Wrap's, with -keys or -kms-key).
type sealReader interface {
	// Describe says what a payload left sealed is.
	Describe(payload []byte) string
	// SealedReason is why the payloads of a key ID were left sealed (nil:
	// none were).
	SealedReason(keyID string) error
}

// sealer is the encrypting World the command reads through (-keys,
// -kms-key), or nil.
func (e *env) sealer() sealReader {
	ew, _ := e.w.(sealReader)
	return ew
}

// sealsNote is what a command that starts a run adds when skein seals it
// (-keys, -kms-key): only workers that hold the key will run it.
func (e *env) sealsNote() string {
	if e.sealer() == nil {
		return ""
	}
	return " (sealed with the key given to skein: only workers holding that key run it; one without it leaves the run waiting)"
}

// stillSealed is the error of a command that would write (or export) run
// r's payloads while they are still sealed: no key given to skein opened
// them, and a new run, a hook payload or a history made from them would be
// wrong or in clear.
func (e *env) stillSealed(r *world.Run, doing string) error {
	kid, ok := encrypt.SealedKeyID(r.Input)
	if !ok {
		return nil
	}
	if ew := e.sealer(); ew != nil {
		if why := ew.SealedReason(kid); why != nil && !errors.Is(why, encrypt.ErrNoSuchKey) {
			return fmt.Errorf("run %s's payloads are encrypted with key %q, and the key given does not open them (%v): pass the right key in -keys (a local store) or -kms-key (a stack) to %s", r.RunID, kid, why, doing)
		}
	}
	return fmt.Errorf("run %s's payloads are encrypted with key %q, which skein cannot use here: pass -keys (a local store) or -kms-key (a stack) to %s", r.RunID, kid, doing)
}

// sealedStreamError is err, a stream chunk that stayed sealed, with the
// reason the keys given did not open it when skein knows it.
func (e *env) sealedStreamError(err error) error {
	_, kid, ok := sealmark.KeyOf(err)
	ew := e.sealer()
	if !ok || ew == nil {
		return err
	}
	if why := ew.SealedReason(kid); why != nil && !errors.Is(why, encrypt.ErrNoSuchKey) {
		return fmt.Errorf("the stream is encrypted, and the keys given do not open it: %w", why)
	}
	return err
}
