// Package sealmark says whether a run's payloads are sealed (package
// encrypt), from what the run recorded when it was created, for the code
// that must know it without opening anything: the engine, which holds a
// sealed run for an executor with the key rather than run its workflow on
// an envelope, and the writers that refuse to put plaintext into a sealed
// run.
//
// A run is sealed when its execution context carries the marker an
// encrypting World records on run_created ({"skein.sealed":2,...}), or when
// its input is a JSON object with a top-level "skein.sealed" member: the
// envelope that holds the run's wrapped data key (runs sealed before the
// marker existed carry only that). Either is enough, so that damage to one
// of them does not make a sealed run look clear.
package sealmark

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/skeinflow/skein/world"
)

// Tag names an envelope's version member and the execution context's
// marker.
const Tag = "skein.sealed"

// Version is the envelope version the marker records: runs marked seal
// every payload with it.
const Version = 2

// prefix is the marker as it opens a marked execution context.
var prefix = []byte(`{"` + Tag + `":` + strconv.Itoa(Version))

// Mark returns ec with the marker as its first member. An execution
// context that is not a JSON object (none the engine writes) is returned
// as it is: the run is then recognised by its input alone.
func Mark(ec json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(ec)
	switch {
	case len(t) == 0:
		return append(append([]byte{}, prefix...), '}')
	case t[0] != '{':
		return ec
	}
	rest := bytes.TrimSpace(t[1:])
	out := append([]byte{}, prefix...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// Unmark returns ec without the marker Mark put there, and whether it
// had it.
func Unmark(ec json.RawMessage) (json.RawMessage, bool) {
	if !bytes.HasPrefix(ec, prefix) || len(ec) == len(prefix) {
		return ec, false
	}
	switch ec[len(prefix)] {
	case '}':
		if len(ec) == len(prefix)+1 {
			return nil, true
		}
	case ',':
		out := append([]byte{'{'}, ec[len(prefix)+1:]...)
		return out, true
	}
	return ec, false
}

// Marked reports whether ec carries the marker.
func Marked(ec json.RawMessage) bool {
	_, ok := Unmark(ec)
	return ok
}

// Sealed reports whether the run whose input and execution context these
// are is sealed, and the ID of the key its input names (empty when the
// input does not name one).
func Sealed(input, ec json.RawMessage) (keyID string, sealed bool) {
	keyID, claims := inputClaims(input)
	return keyID, claims || Marked(ec)
}

// inputClaims reports whether input is a JSON object with a top-level Tag
// member, and the "kid" member's value when it has one.
func inputClaims(input json.RawMessage) (string, bool) {
	t := bytes.TrimSpace(input)
	if len(t) == 0 || t[0] != '{' || !bytes.Contains(t, []byte(Tag)) {
		return "", false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(t, &m) != nil {
		return "", false
	}
	if _, ok := m[Tag]; !ok {
		return "", false
	}
	var kid string
	_ = json.Unmarshal(m["kid"], &kid)
	return kid, true
}

// KeylessError is what a reader or writer that holds no key meets in a
// sealed run: its payloads are envelopes it cannot open, and what it
// would write would be in clear. It matches world.ErrKeyUnavailable, so
// that the engine leaves the run's message for an executor with the key.
type KeylessError struct {
	RunID, KeyID string
	// Doing, set for a writer, is what was refused ("deliver a hook
	// payload"): nothing was written.
	Doing string
}

func (e *KeylessError) Error() string {
	key := ""
	if e.KeyID != "" {
		key = fmt.Sprintf(" with key %q", e.KeyID)
	}
	if e.Doing != "" {
		return fmt.Sprintf("run %s's payloads are encrypted%s, and this World does not seal them (no encryption configured here): "+
			"refused to %s, which would be stored in clear; nothing was written (use a World wrapped with the key: encrypt.Wrap)", e.RunID, key, e.Doing)
	}
	return fmt.Sprintf("run %s's payloads are encrypted%s, and this World does not open them (no encryption configured here): "+
		"the run waits for an executor with the key", e.RunID, key)
}

// Is matches world.ErrKeyUnavailable.
func (e *KeylessError) Is(target error) bool { return target == world.ErrKeyUnavailable }

// KeyUnavailableID returns KeyID (see the engine's key refusal).
func (e *KeylessError) KeyUnavailableID() string { return e.KeyID }

// Check returns a *KeylessError when the run is sealed, nil when not.
func Check(runID string, input, ec json.RawMessage) error {
	return CheckWrite(runID, input, ec, "")
}

// CheckWrite is Check for a writer about to do doing: a *KeylessError
// saying that nothing was written.
func CheckWrite(runID string, input, ec json.RawMessage, doing string) error {
	if kid, sealed := Sealed(input, ec); sealed {
		return &KeylessError{RunID: runID, KeyID: kid, Doing: doing}
	}
	return nil
}
