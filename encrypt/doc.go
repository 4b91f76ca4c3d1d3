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
// the run is sealed with it. LocalKeys wraps with AES-256 keys from
// configuration (for the local world and tests); the kmskeys package wraps
// with AWS KMS. Keys rotate: a keyring names the key that wraps new runs'
// data keys and keeps the old ones to unwrap older runs. A payload whose key
// is not available, or that does not decrypt with it, is a *KeyError naming
// the key ID, never garbage; with LocalKeys it wraps ErrNoSuchKey (no key
// with that ID) or ErrWrongKey (a key with that ID but other bytes). A tool
// that shows what it can (Config.LeaveSealed) asks SealedReason why a key's
// payloads stayed sealed, and Describe says it. A KeyError also matches
// world.ErrKeyUnavailable: the engine then leaves the run's message for an
// executor holding the key (sent back to the queue, not counted against
// MaxDeliveries), so a worker deployed with a wrong key stalls runs but
// never fails them.
//
// Runs created before encryption was turned on keep their payloads in
// clear, and are read as they are. Wrap both the World the workers use and
// the one clients and tools read: a reader without the wrapper (or without
// the key) sees envelopes, which IsSealed and SealedKeyID recognise.
package encrypt
