package sealmark

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// FirstVersion is the oldest envelope version a reader recognises (runs
// sealed before the marker existed); Version is the newest.
const FirstVersion = 1

// KeyID returns the ID of the key a sealed payload needs, and false when
// the payload is not sealed: how a reader without the key (no encrypting
// World, or one that leaves what it cannot open sealed) recognises an
// envelope, from its shape alone. It decides nothing about a run (see
// Sealed): in a run created before encryption was turned on, a payload of
// that shape is the run's data.
func KeyID(payload []byte) (string, bool) {
	t := bytes.TrimSpace(payload)
	if len(t) == 0 || t[0] != '{' || !bytes.Contains(t, []byte(`"`+Tag+`"`)) {
		return "", false
	}
	// The members of an envelope as package encrypt writes it.
	var env struct {
		Version int    `json:"skein.sealed"`
		Key     string `json:"kid"`
		Wrapped []byte `json:"dk,omitempty"`
		Data    []byte `json:"ct"`
	}
	if json.Unmarshal(t, &env) != nil || env.Version < FirstVersion || env.Version > Version || env.Key == "" || len(env.Data) == 0 {
		return "", false
	}
	return env.Key, true
}

// NoKey is the cause Note gives for data no key was offered for.
const NoKey = "no key to decrypt it"

// Note is how a tool shows data sealed with key keyID that stayed sealed,
// cause saying why: `[encrypted with key "k1"; no key to decrypt it]`.
func Note(keyID, cause string) string {
	return fmt.Sprintf("[encrypted with key %q; %s]", keyID, cause)
}

// Describe is how a tool shows a payload it cannot open: Note with NoKey
// for a sealed payload, the payload itself when it is not sealed.
func Describe(payload []byte) string {
	if id, ok := KeyID(payload); ok {
		return Note(id, NoKey)
	}
	return string(payload)
}
