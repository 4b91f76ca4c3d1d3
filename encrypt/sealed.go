package encrypt

import (
	"errors"

	"github.com/skeinflow/skein/internal/sealmark"
)

// noteSealed records why a payload sealed with keyID stays sealed
// (Config.LeaveSealed).
func (w *sealedWorld) noteSealed(keyID string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sealedWhy == nil {
		w.sealedWhy = map[string]error{}
	}
	w.sealedWhy[keyID] = err
}

// SealedReason returns why a read left payloads sealed with key keyID
// sealed (Config.LeaveSealed): the latest such *KeyError, which matches
// ErrNoSuchKey when the keyring has no key keyID and ErrWrongKey when it
// has one that does not open the data; nil when no read left one sealed.
func (w *sealedWorld) SealedReason(keyID string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sealedWhy[keyID]
}

// Describe is how a tool shows a payload read through w that stayed
// sealed (Config.LeaveSealed): like the package's Describe, with the
// reason this World's keys did not open it: no key with its ID, or a key
// with that ID that does not open it.
func (w *sealedWorld) Describe(payload []byte) string {
	id, ok := SealedKeyID(payload)
	if !ok {
		return string(payload)
	}
	return w.DescribeKey(id)
}

// DescribeKey is Describe for data sealed with key keyID (a stream whose
// chunks stayed sealed, say): "[encrypted with key "k1"; why]".
func (w *sealedWorld) DescribeKey(keyID string) string {
	return sealmark.Note(keyID, sealedCause(w.SealedReason(keyID)))
}

// sealedCause says, in a few words, why a payload stayed sealed.
func sealedCause(err error) string {
	var ke *KeyError
	switch {
	case err == nil, errors.Is(err, ErrNoSuchKey):
		return sealmark.NoKey
	case errors.Is(err, ErrWrongKey):
		return "the key given with that ID does not open it (other key bytes than the ones that sealed it)"
	case errors.As(err, &ke) && ke.Err != nil:
		return "cannot decrypt it: " + ke.Err.Error()
	}
	return "cannot decrypt it: " + err.Error()
}
