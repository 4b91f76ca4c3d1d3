package sealmark

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/skeinflow/skein/world"
)

// KeylessError is what a reader or writer that holds no key meets in a
// sealed run: its payloads are envelopes it cannot open, and what it
// would write would be in clear. It matches world.ErrKeyUnavailable, so
// that the engine leaves the run's message for an executor with the key,
// and a client's caller tells it from other failures.
type KeylessError struct {
	RunID, KeyID string
	// Doing, set for a writer, is what was refused ("deliver a hook
	// payload"): nothing was written.
	Doing string
	// Read, set for a reader (a client reading a stream, say), says what
	// it found sealed and why it stays so ("the stream is encrypted, and
	// this client's World has no key to open it").
	Read string
}

func (e *KeylessError) Error() string {
	key := ""
	if e.KeyID != "" {
		key = fmt.Sprintf(" with key %q", e.KeyID)
	}
	switch {
	case e.Read != "":
		return fmt.Sprintf("cannot decrypt the payloads of run %s%s: %s", e.RunID, key, e.Read)
	case e.Doing != "":
		return fmt.Sprintf("run %s's payloads are encrypted%s, and this World does not seal them (no encryption configured here): "+
			"refused to %s, which would be stored in clear; nothing was written (use a World wrapped with the key: encrypt.Wrap)", e.RunID, key, e.Doing)
	}
	return fmt.Sprintf("run %s's payloads are encrypted%s, and this World does not open them (no encryption configured here): "+
		"the run waits for an executor with the key", e.RunID, key)
}

// Is matches world.ErrKeyUnavailable.
func (e *KeylessError) Is(target error) bool { return target == world.ErrKeyUnavailable }

// KeyUnavailable returns RunID and KeyID (see KeyOf).
func (e *KeylessError) KeyUnavailable() (runID, keyID string) { return e.RunID, e.KeyID }

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

// KeyOf reports whether err is a "key unavailable" error (it matches
// world.ErrKeyUnavailable), and the run and the key it names: how the
// engine, the SDK, the API and the dashboard read a key error without
// knowing who raised it. Any error in err's chain with a method
// KeyUnavailable() (runID, keyID string) names them (this package's
// KeylessError, an encrypting World's key error); otherwise both are "".
func KeyOf(err error) (runID, keyID string, ok bool) {
	if !errors.Is(err, world.ErrKeyUnavailable) {
		return "", "", false
	}
	var k interface{ KeyUnavailable() (runID, keyID string) }
	if errors.As(err, &k) {
		runID, keyID = k.KeyUnavailable()
	}
	return runID, keyID, true
}
