// Package localworld is Skein's embedded World: the event log, its entities,
// the delayed queue and output streams in one store, either a single durable
// file or memory. It is what a test, a laptop or the quickstart runs on;
// Lambda runs on dynamoworld.
//
//	w, err := localworld.Open(localworld.Config{Path: "skein.db"}) // "" = in memory
//	defer w.Close()
//
// *World implements world.World, world.Consumer and world.StreamNotifier, and
// passes world/worldtest in both modes.
//
// # One logic layer, two stores
//
// Every operation is written once against a small ordered key-value
// interface (get, put, delete and an ordered range scan per bucket, inside
// serializable transactions), which has two implementations: bbolt for the
// file, and a B-tree per bucket (github.com/google/btree) for memory. The
// modes therefore behave identically; only durability differs.
//
// # Why bbolt
//
// go.etcd.io/bbolt is pure Go (no cgo, cross-compiles), keeps everything in
// one file, and gives ACID transactions: a commit writes its pages, fsyncs,
// then writes and fsyncs a checksummed meta page, so it is all there after a
// crash or not there at all. It allows one writer at a time, which matches
// an embedded world owned by one process (and serializes Append, so the state
// machine always judges an event against the latest state), while readers
// run in parallel on a snapshot. Because a transaction is just a function
// over the open file, concurrent writers can be combined into one
// transaction: group commit, one fsync shared by many Appends that are each
// still durable when they return (SyncBatch). localworld does this with a
// leader that commits at once rather than with bbolt's DB.Batch, whose timer
// costs a lone writer a millisecond or more per commit (kv_group.go,
// BENCHMARKS.md).
//
// # Durability and damaged files
//
// Config.Sync chooses between SyncEveryCommit (default: fsync per
// transaction), SyncBatch (group commit, same guarantee, faster with many
// concurrent writers) and SyncNone (no fsync; survives a process crash, not
// a machine crash). A missing file is
// built under a temporary name and linked into place, so the path never
// names a half-made store. An existing file is checked before bbolt maps it:
// both meta pages must carry valid checksums and the file must hold every
// page the newest commit references. A truncated or damaged file, or one
// that is not a localworld store, fails Open with ErrCorrupt naming the file,
// and nothing is written to it; a file another process holds fails with
// ErrLocked after Config.LockTimeout. A stored record that does not decode
// is reported as ErrCorrupt naming its bucket and key.
//
// # Layout
//
// Each bucket is an ordered keyspace (a bbolt bucket, or a B-tree). In keys,
// s() is a string with a uvarint length prefix (so a prefix scan over it
// never matches a longer string), u64() and seq() are big-endian, t() is a
// time in Unix nanoseconds (big-endian, sign bit flipped so byte order is
// time order), and raw() is bytes as they are. Index values are empty.
// Records are JSON.
//
//	meta                      "format" -> "skein-localworld/1"
//	runs                      raw(runID) -> Run
//	runs_by_time              t(createdAt) raw(runID)                       newest first = reverse scan
//	runs_by_name              s(workflowName) t(createdAt) raw(runID)
//	runs_by_status            s(status) t(createdAt) raw(runID)             moved on status change
//	runs_by_name_status       s(workflowName) s(status) t(createdAt) raw(runID)
//	run_idempotency           raw(idempotencyKey) -> runID
//	events                    s(runID) seq(seq) -> Event                    dense per run
//	events_by_correlation     s(correlationID) s(runID) seq(seq)
//	steps                     s(runID) raw(stepID) -> Step
//	steps_by_run              s(runID) seq(seq of step_created) raw(stepID)
//	hooks                     raw(hookID) -> Hook (+ seq of hook_created)   active hooks only
//	hooks_by_time             t(createdAt) raw(hookID)
//	hooks_by_run              s(runID) seq(seq of hook_created) raw(hookID)
//	hook_tokens               raw(token) -> hookID                          active tokens only
//	waits                     s(runID) raw(waitID) -> Wait                  deleted when the run ends
//	leases                    raw(runID) -> {owner, expiresAt}
//	queue_messages            raw(messageID) -> {body, attempt, enqueuedAt, visibleAt, key}
//	queue_visible             t(visibleAt) raw(messageID)                   every message
//	queue_idempotency         raw(key) -> {messageID, expiresAt}
//	queue_idempotency_expiry  t(expiresAt) raw(key)
//	streams                   s(runID) raw(name) -> {count, done}
//	stream_chunks             s(runID) s(name) u64(index) -> bytes
//
// Append runs all the events of a commit in one write transaction: for each
// event it reads the run, the step, hook or wait the correlation ID names,
// the token's holder and the idempotency key's run, calls world.Apply, and
// writes the event and the effect (entities, indexes, a disposed hook and its
// token; when the run ends, its hooks, their tokens and its waits). The
// first refusal rolls the commit back.
//
// # Queue
//
// A message is visible when its queue_visible time has passed. Receive takes
// the visible ones in that order, moves each to now+visibility and counts an
// attempt, all in one transaction; a message neither acked nor released by
// then is visible again. With nothing visible, Receive sleeps until an
// Enqueue or Release signals, the earliest delayed message is due, or its
// wait ends: there is no polling loop. Messages, attempts and idempotency
// keys are in the store, so a durable queue survives a restart.
//
// # Time
//
// Config.Now is the only clock: createdAt, leases, delays, visibility and
// dedupe expiry all read it. Receive converts a due time into a real timer,
// so with a frozen clock a delayed message never becomes due.
package localworld
