package encrypt

import (
	"bytes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// sealedTag marks an envelope: the JSON object a sealed payload becomes.
const sealedTag = "skein.sealed"

// envelope is a sealed payload as stored: valid JSON, as the World wants
// payloads to be. Key is the key-encryption key's ID; Wrapped, only in a
// run's input, its data key wrapped by that key; Data the nonce and the
// ciphertext.
type envelope struct {
	Version int    `json:"skein.sealed"`
	Key     string `json:"kid"`
	Wrapped []byte `json:"dk,omitempty"`
	Data    []byte `json:"ct"`
}

// Payload purposes: the additional data a payload is sealed with, so that
// a sealed payload cannot be moved to another run or another place.
const (
	purposeRunInput   = "run.input"
	purposeRunOutput  = "run.output"
	purposeStepInput  = "step.input"
	purposeStepOutput = "step.output"
	purposeHook       = "hook.payload"
	purposeStream     = "stream."
)

// runKey is a run's data key, open.
type runKey struct {
	keyID   string
	wrapped []byte // set for the run's input only
	aead    cipher.AEAD
	raw     []byte
}

func aad(runID, purpose string) []byte { return []byte(runID + "\x00" + purpose) }

// sealPayload seals plain (a payload, possibly empty) for runID. A payload
// that is not valid JSON is left as it is, for the World to refuse as
// invalid (stream chunks, raw bytes, are always sealed).
func (k *runKey) sealPayload(runID, purpose string, plain []byte, withKey bool) ([]byte, error) {
	if len(plain) > 0 && !strings.HasPrefix(purpose, purposeStream) && !json.Valid(plain) {
		return plain, nil
	}
	ct, err := seal(k.aead, plain, aad(runID, purpose))
	if err != nil {
		return nil, err
	}
	env := envelope{Version: 1, Key: k.keyID, Data: ct}
	if withKey {
		env.Wrapped = k.wrapped
	}
	return json.Marshal(env)
}

// openPayload opens a sealed payload of runID.
func (k *runKey) openPayload(runID, purpose string, env *envelope) ([]byte, error) {
	plain, err := open(k.aead, env.Data, aad(runID, purpose))
	if err != nil {
		return nil, &KeyError{KeyID: env.Key, RunID: runID, Err: errors.New("the payload does not decrypt with the run's data key (tampered, or moved from elsewhere)")}
	}
	return plain, nil
}

// digest is the keyed digest a sealed step input's InputDigest holds
// instead of the plain one: the plain digest of a guessable input (a card's
// last four digits) would give the input away.
func (k *runKey) digest(plain []byte, size int) string {
	m := hmac.New(sha256.New, k.raw)
	m.Write([]byte("step.digest\x00"))
	m.Write(plain)
	return hex.EncodeToString(m.Sum(nil))[:size]
}

// parseEnvelope returns the envelope b is, or nil when b is not sealed.
func parseEnvelope(b []byte) *envelope {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || t[0] != '{' || !bytes.Contains(t, []byte(`"`+sealedTag+`"`)) {
		return nil
	}
	var env envelope
	if json.Unmarshal(t, &env) != nil || env.Version != 1 || env.Key == "" || len(env.Data) == 0 {
		return nil
	}
	return &env
}

// IsSealed reports whether a payload read without the wrapper (or without
// its key) is sealed.
func IsSealed(payload []byte) bool { return parseEnvelope(payload) != nil }

// SealedKeyID returns the ID of the key a sealed payload needs, and false
// when the payload is not sealed.
func SealedKeyID(payload []byte) (string, bool) {
	if env := parseEnvelope(payload); env != nil {
		return env.Key, true
	}
	return "", false
}

// Describe is how a tool shows a payload it cannot open: a short note
// naming the key, or the payload itself when it is not sealed.
func Describe(payload []byte) string {
	if id, ok := SealedKeyID(payload); ok {
		return fmt.Sprintf("[encrypted with key %q; no key to decrypt it]", id)
	}
	return string(payload)
}
