package encrypt

import (
	"bytes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/skeinflow/skein/internal/sealmark"
)

// sealedTag marks an envelope: the JSON object a sealed payload becomes.
const sealedTag = sealmark.Tag

// Envelope versions. Version 1 sealed a payload for its run and field
// only (run.input, step.output, ...); version 2 also for its entity (the
// step, the hook, the stream), so that two payloads of one run cannot be
// swapped. Runs created since version 2 record it on run_created
// (sealmark.Mark) and open version 2 only; runs sealed before keep opening
// their version-1 payloads (see openPayload).
const (
	envelopeV1 = sealmark.FirstVersion
	envelopeV2 = sealmark.Version
)

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

// Payload fields: with the entity, what a payload is sealed for (its
// additional data), so that a sealed payload cannot be moved to another
// run, another entity or another field.
const (
	fieldRunInput   = "run.input"
	fieldRunOutput  = "run.output"
	fieldStepInput  = "step.input"
	fieldStepOutput = "step.output"
	fieldHook       = "hook.payload"
	fieldStream     = "stream."
)

// place is where a payload belongs in its run: a field of the run
// (entity empty) or of one step (its ID), hook (its ID) or stream (its
// name). The payloads of one hook, or the chunks of one stream, share a
// place: their order is the World's (see the package doc).
type place struct {
	field, entity string
}

// aad is the additional data a payload of runID at p is sealed with, as
// envelope version v binds it.
func (p place) aad(runID string, v int) []byte {
	if v == envelopeV1 {
		f := p.field
		if f == fieldStream {
			f += p.entity
		}
		return []byte(runID + "\x00" + f)
	}
	b := []byte("skein.sealed/2")
	for _, s := range []string{runID, p.field, p.entity} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// ErrTampered is the cause a *KeyError wraps when a payload of a sealed run
// is not what the run's key sealed at its place: not an envelope (plaintext
// put in its place), an envelope changed in any byte, one of another key
// or version, one moved from another run, entity or field, or a payload
// missing where the run sealed one. The run's key opened, so no other key
// would help: the store was damaged or written by something other than
// the encrypting World.
var ErrTampered = errors.New("the payload is not what the run's key sealed there (damaged, tampered with, or moved from elsewhere)")

// tampered is the *KeyError of a payload of runID at p that does not open.
func tampered(runID, keyID string, p place, why string) error {
	at := p.field
	if p.entity != "" {
		at += " of " + p.entity
	}
	return &KeyError{KeyID: keyID, RunID: runID, Err: fmt.Errorf("%w: %s: %s", ErrTampered, at, why)}
}

// runKey is a run's data key, open.
type runKey struct {
	keyID   string
	wrapped []byte // the run's input's
	aead    cipher.AEAD
	raw     []byte
	// version is the run's input's envelope version: a version-1 run (sealed
	// before version 2) opens version-1 payloads too.
	version int
}

// sealPayload seals plain (a payload, possibly empty) for runID at p, with
// the run's wrapped key when withKey. A payload that is not valid JSON is
// left as it is, for the World to refuse as invalid (stream chunks, raw
// bytes, are always sealed).
func (k *runKey) sealPayload(runID string, p place, plain []byte, withKey bool) ([]byte, error) {
	if len(plain) > 0 && p.field != fieldStream && !json.Valid(plain) {
		return plain, nil
	}
	ct, err := seal(k.aead, plain, p.aad(runID, envelopeV2))
	if err != nil {
		return nil, err
	}
	env := envelope{Version: envelopeV2, Key: k.keyID, Data: ct}
	if withKey {
		env.Wrapped = k.wrapped
	}
	return json.Marshal(env)
}

// openPayload opens b, a payload of runID at p, which the run's key must
// have sealed there: anything else is a *KeyError wrapping ErrTampered.
// required says that the run sealed a payload there (an empty b is then
// missing, not none).
func (k *runKey) openPayload(runID string, p place, b []byte, required bool) ([]byte, error) {
	if len(b) == 0 {
		if required {
			return nil, tampered(runID, k.keyID, p, "missing")
		}
		return nil, nil
	}
	env, err := strictEnvelope(b)
	if err != nil {
		return nil, tampered(runID, k.keyID, p, err.Error())
	}
	switch {
	case env.Key != k.keyID:
		return nil, tampered(runID, k.keyID, p, fmt.Sprintf("sealed under key %q, not the run's", env.Key))
	case env.Version < k.version:
		return nil, tampered(runID, k.keyID, p, fmt.Sprintf("envelope version %d in a run sealed with version %d", env.Version, k.version))
	case len(env.Wrapped) > 0 && (p != place{field: fieldRunInput} || !bytes.Equal(env.Wrapped, k.wrapped)):
		return nil, tampered(runID, k.keyID, p, "carries a data key that is not the run's")
	}
	plain, err := open(k.aead, env.Data, p.aad(runID, env.Version))
	if err != nil {
		return nil, tampered(runID, k.keyID, p, "does not decrypt with the run's data key")
	}
	return plain, nil
}

// strictEnvelope parses b, which must be an envelope exactly as
// sealPayload writes it: a known version, a key ID, a ciphertext, and not
// one byte other than json.Marshal makes of them.
func strictEnvelope(b []byte) (*envelope, error) {
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, errors.New("not an envelope")
	}
	switch {
	case env.Version != envelopeV1 && env.Version != envelopeV2:
		return nil, fmt.Errorf("envelope version %d unknown", env.Version)
	case env.Key == "":
		return nil, errors.New("the envelope names no key")
	}
	canon, err := json.Marshal(&env)
	if err != nil || !bytes.Equal(canon, b) {
		return nil, errors.New("the envelope is not as sealed")
	}
	return &env, nil
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

// IsSealed reports whether a payload read without the wrapper (or without
// its key) is sealed.
func IsSealed(payload []byte) bool {
	_, ok := sealmark.KeyID(payload)
	return ok
}

// SealedKeyID returns the ID of the key a sealed payload needs, and false
// when the payload is not sealed.
func SealedKeyID(payload []byte) (string, bool) { return sealmark.KeyID(payload) }

// Describe is how a tool shows a payload it cannot open: a short note
// naming the key, or the payload itself when it is not sealed.
func Describe(payload []byte) string { return sealmark.Describe(payload) }
