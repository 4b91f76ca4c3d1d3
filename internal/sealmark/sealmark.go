// Package sealmark is the seam between package encrypt and the rest of
// Skein: what the engine, the SDK, the API and the dashboard know of
// sealed payloads, without opening any or naming encrypt (only the wiring,
// skeinlambda and cmd/skein, imports encrypt; boundaries_test.go checks
// it). It offers three things:
//
//   - whether a run's payloads are sealed, from what the run recorded when
//     it was created (Sealed, Check), for the code that must know it
//     without opening anything: the engine, which holds a sealed run for an
//     executor with the key rather than run its workflow on an envelope,
//     and the writers that refuse to put plaintext into a sealed run;
//   - whether one payload is sealed, from its shape (KeyID, Describe,
//     Note), for the readers that show or compare what they read: a
//     client without the key, the dashboard;
//   - the "key unavailable" error: KeylessError for a reader or writer
//     that holds no key, and KeyOf, which reads the run and the key from
//     any error matching world.ErrKeyUnavailable (this package's, or the
//     encrypting World's, by its KeyUnavailable method).
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
	"strconv"
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
