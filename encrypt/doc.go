// Package encrypt keeps a run's payloads encrypted in the store: a World
// wrapper (Wrap) that encrypts the workflow's input and result, step inputs
// and results, hook payloads and stream chunks on their way into any World
// and decrypts them on the way out, so the engine, the SDK and the CLI see
// plaintext and the World, its table, its files and its S3 objects see only
// ciphertext. Names, statuses, timings, idempotency keys and attributes stay
// in clear, for listing; so do hook metadata and tokens, and the errors
// recorded for failed steps and runs (keep personal data out of error
// messages and hook metadata).
//
// Envelope encryption: each run gets a data key of its own (AES-256-GCM),
// drawn when the run is created and stored wrapped by a key-encryption key
// from a Keyring, with that key's ID, in the run's input; every payload of
// the run is sealed with it. NewLocalKeys wraps with AES-256 keys from
// configuration (for the local world and tests); the kmskeys package wraps
// with AWS KMS. Keys rotate: a keyring names the key that wraps new runs'
// data keys and keeps the old ones to unwrap older runs. A payload whose key
// is not available, or that does not decrypt with it, is a *KeyError naming
// the key ID, never garbage; with NewLocalKeys' keyring it wraps ErrNoSuchKey (no key
// with that ID) or ErrWrongKey (a key with that ID but other bytes). A tool
// that shows what it can (Config.LeaveSealed) asks SealedReason why a key's
// payloads stayed sealed, and Describe says it. A KeyError also matches
// world.ErrKeyUnavailable, and its KeyUnavailable method names the run and
// the key: that is all the engine, the SDK, the HTTP API and the dashboard
// know of it, for only the wiring (skeinlambda, the skein command) imports
// this package. The engine then leaves the run's message for an
// executor holding the key (sent back to the queue, not counted against
// MaxDeliveries), so a worker deployed with a wrong key stalls runs but
// never fails them.
//
// Whether a run is sealed is decided from the run, as it was created: an
// encrypting World records it on run_created (a marker in the execution
// context, which readers through the wrapper never see) and the run's
// input is the envelope holding its wrapped data key; either one makes the
// run sealed. In a sealed run every payload the World returns must open
// under the run's data key at its place, or the read fails with a
// *KeyError wrapping ErrTampered: plaintext put in place of an envelope,
// an envelope changed in any byte, of another version or key, one moved
// from elsewhere, a payload missing. A run's data key comes only from the
// run's own key record, and only once the run's input opens under it: a
// payload carrying another key is an error, and nothing is cached from it.
// Such damage is never left sealed for a tool (Config.LeaveSealed covers a
// missing or wrong key only), and a listing fails on it.
//
// Each payload is sealed for its place (envelope version 2): its run, its
// field (run input or output, step input or result, hook payload, stream
// chunk) and its entity (the step, the hook, the stream), so that a sealed
// payload cannot be moved to another run, field or entity. The payloads of
// one hook, and the chunks of one stream, share a place: the World orders
// them. Runs sealed before version 2 (no marker, a version-1 input) keep
// opening their version-1 payloads, which are bound to run and field only;
// a run marked version 2 refuses version 1.
//
// Runs created before encryption was turned on keep their payloads in
// clear, and are read as they are, whatever their shape (a payload that
// looks like an envelope is their data). Wrap both the World the workers
// use and the one clients and tools read: a reader without the wrapper (or
// without the key) sees envelopes, which IsSealed and SealedKeyID
// recognise.
package encrypt
