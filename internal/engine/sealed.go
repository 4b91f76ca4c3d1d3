package engine

import (
	"encoding/json"

	"github.com/skeinflow/skein/internal/sealmark"
)

// Encryption, as the engine sees it: the one file of the engine that knows
// payloads may be sealed. The engine never opens a payload and knows
// nothing of envelopes. An encrypting World (package encrypt, which only
// the wiring imports) hands it plaintext, or fails a read with an error
// matching world.ErrKeyUnavailable when its keys do not open the run. A
// World that does not seal hands it what is stored; sealedWithoutKey, from
// the run's record alone (internal/sealmark), refuses such a run before a
// workflow, a step, a cleanup hook or a hook delivery touches its
// envelopes. Either way the run's message waits for an executor with the
// key (refuseKey), whose log names the key (keyID).

// sealedWithoutKey returns an error matching world.ErrKeyUnavailable when
// the run whose input and execution context these are (as this engine's
// World returned them) is sealed: the World left its payloads sealed, so
// nothing may run on them. Nil for a run in clear, or opened.
func sealedWithoutKey(runID string, input, ec json.RawMessage) error {
	return sealmark.Check(runID, input, ec)
}

// sealedNoWrite is sealedWithoutKey for a writer about to do doing ("deliver
// a hook payload"): what it would write would be stored in clear in a run
// that could never read it. The error says that nothing was written.
func sealedNoWrite(runID string, input, ec json.RawMessage, doing string) error {
	return sealmark.CheckWrite(runID, input, ec, doing)
}

// keyID is the ID of the key a key error names, or "" when it names none.
func keyID(err error) string {
	_, id, _ := sealmark.KeyOf(err)
	return id
}
