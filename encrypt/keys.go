package encrypt

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skeinflow/skein/world"
)

// DataKeySize is the size of a run's data key: AES-256.
const DataKeySize = 32

// The causes a *KeyError of a NewLocalKeys keyring wraps: errors.Is tells a key ID the
// keyring does not have from a key that has the ID but other bytes than
// the key that sealed the data.
var (
	// ErrNoSuchKey: the keyring has no key with the ID the data names.
	ErrNoSuchKey = errors.New("the keyring has no such key")
	// ErrWrongKey: the keyring has a key with that ID, and it does not
	// open the run's data key (other key bytes under the same ID).
	ErrWrongKey = errors.New("the key does not open the run's data key (a wrong key for this ID?)")
)

// KeyError reports a payload that cannot be decrypted: its key-encryption
// key is not in the keyring, or the key does not open it (a wrong key, or a
// tampered ciphertext).
type KeyError struct {
	KeyID string
	RunID string
	Err   error
}

func (e *KeyError) Error() string {
	run := ""
	if e.RunID != "" {
		run = " of run " + e.RunID
	}
	return fmt.Sprintf("encrypt: cannot decrypt the payloads%s with key %q: %v", run, e.KeyID, e.Err)
}

// Unwrap returns the cause.
func (e *KeyError) Unwrap() error { return e.Err }

// KeyUnavailable returns RunID and KeyID: how the engine, the SDK, the
// API and the dashboard, which do not import this package, name the run
// and the key of an error matching world.ErrKeyUnavailable.
func (e *KeyError) KeyUnavailable() (runID, keyID string) { return e.RunID, e.KeyID }

// Is makes a KeyError match world.ErrKeyUnavailable (what the engine
// tests for: it leaves the run's message for an executor with the key
// rather than count the delivery against the run).
func (e *KeyError) Is(target error) bool { return target == world.ErrKeyUnavailable }

// isKeyError reports whether err is or wraps a *KeyError.
func isKeyError(err error) bool {
	var ke *KeyError
	return errors.As(err, &ke)
}

// Keyring makes and opens the data keys of runs.
type Keyring interface {
	// NewDataKey returns a fresh data key (DataKeySize random bytes), the
	// same key wrapped by the keyring's current key-encryption key, and
	// that key's ID.
	NewDataKey(ctx context.Context) (plain, wrapped []byte, keyID string, err error)
	// OpenDataKey unwraps a data key wrapped by key keyID. A key it does not
	// have, or one that does not open wrapped, is an error.
	OpenDataKey(ctx context.Context, keyID string, wrapped []byte) ([]byte, error)
}

// localKeys is a Keyring of AES-256 key-encryption keys held in memory: the
// local world's. Current wraps new data keys; every key opens the data keys
// it wrapped.
type localKeys struct {
	current string
	keys    map[string]cipher.AEAD
}

// NewLocalKeys returns a keyring of AES-256 key-encryption keys held in
// memory (ID -> 32-byte key) whose current key is current: current wraps
// new data keys, every key opens the data keys it wrapped. A key it lacks
// is a *KeyError wrapping ErrNoSuchKey, one that does not open a data key
// a *KeyError wrapping ErrWrongKey.
func NewLocalKeys(current string, keys map[string][]byte) (Keyring, error) {
	if _, ok := keys[current]; !ok {
		return nil, fmt.Errorf("encrypt: the current key %q is not among the keys %q", current, slices.Sorted(maps.Keys(keys)))
	}
	k := &localKeys{current: current, keys: map[string]cipher.AEAD{}}
	for id, key := range keys {
		if id == "" {
			return nil, errors.New("encrypt: a key with an empty ID")
		}
		aead, err := newAEAD(key)
		if err != nil {
			return nil, fmt.Errorf("encrypt: key %q: %w", id, err)
		}
		k.keys[id] = aead
	}
	return k, nil
}

// NewDataKey draws a data key and wraps it with the current key.
func (k *localKeys) NewDataKey(context.Context) (plain, wrapped []byte, keyID string, err error) {
	plain = make([]byte, DataKeySize)
	if _, err := rand.Read(plain); err != nil {
		return nil, nil, "", fmt.Errorf("encrypt: draw a data key: %w", err)
	}
	sealed, err := seal(k.keys[k.current], plain, []byte(k.current))
	if err != nil {
		return nil, nil, "", err
	}
	return plain, sealed, k.current, nil
}

// OpenDataKey unwraps a data key wrapped by key keyID.
func (k *localKeys) OpenDataKey(_ context.Context, keyID string, wrapped []byte) ([]byte, error) {
	aead, ok := k.keys[keyID]
	if !ok {
		return nil, &KeyError{KeyID: keyID, Err: ErrNoSuchKey}
	}
	plain, err := open(aead, wrapped, []byte(keyID))
	if err != nil {
		return nil, &KeyError{KeyID: keyID, Err: ErrWrongKey}
	}
	return plain, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != DataKeySize {
		return nil, fmt.Errorf("want a %d-byte key, got %d bytes", DataKeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts plain with a random nonce, which it prepends.
func seal(aead cipher.AEAD, plain, aad []byte) ([]byte, error) {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("encrypt: draw a nonce: %w", err)
	}
	return aead.Seal(nonce, nonce, plain, aad), nil
}

// open decrypts what seal sealed.
func open(aead cipher.AEAD, sealed, aad []byte) ([]byte, error) {
	if len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, errors.New("ciphertext too short")
	}
	n := aead.NonceSize()
	return aead.Open(nil, sealed[:n], sealed[n:], aad)
}

// ParseLocalKeys reads a keyring from text as configuration holds it:
// comma-separated id=key pairs, each key 32 bytes in standard base64, the
// first pair's key the current one ("k2=...,k1=..."). Errors name the pair,
// never the key.
func ParseLocalKeys(s string) (Keyring, error) {
	keys := map[string][]byte{}
	current := ""
	for i, pair := range strings.Split(s, ",") {
		id, b64, ok := strings.Cut(strings.TrimSpace(pair), "=")
		id = strings.TrimSpace(id)
		if !ok || id == "" {
			return nil, fmt.Errorf("encrypt: keys: entry %d is not id=base64-key", i+1)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err != nil || len(key) != DataKeySize {
			return nil, fmt.Errorf("encrypt: keys: key %q is not %d bytes in standard base64", id, DataKeySize)
		}
		if _, dup := keys[id]; dup {
			return nil, fmt.Errorf("encrypt: keys: key %q given twice", id)
		}
		keys[id] = key
		if current == "" {
			current = id
		}
	}
	return NewLocalKeys(current, keys)
}
