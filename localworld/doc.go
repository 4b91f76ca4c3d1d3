// Package localworld is Skein's embedded World: the event log, its entities,
// the delayed queue and output streams in one store, either a single durable
// file or memory. It is what a test, a laptop or the quickstart runs on;
// Lambda runs on dynamoworld.
//
//	w, err := localworld.Open(localworld.Config{Path: "skein.db"}) // "" = in memory
//	defer w.Close()
//
// *World implements world.World, world.Consumer, world.StreamNotifier and
// world.Watcher, and passes world/worldtest in memory and on a file.
//
// # One logic layer, two stores
//
// Every operation is written once against a small ordered key-value
// interface (get, put, delete and an ordered range scan per bucket, inside
// serializable transactions), which has two implementations: a B-tree per
// bucket (github.com/google/btree) for memory (kv_mem.go), and the same
// B-trees backed by an append-only log file (the only file format:
// kv_log.go, logfile.go). The modes therefore behave identically;
// only durability and cost differ. Writers
// are serialized in every store (one writer, as an embedded world owned by
// one process needs: the state machine always judges an event against the
// latest state).
//
// # The log format
//
// The data lives in the B-trees of the memory mode (but for values moved
// back to the file, below); the file is a log of their changes. A commit appends one record (magic,
// length, CRC-32C, sequence number, then the transaction's puts and
// deletes) with a single write, then fdatasyncs before the call returns:
// one device flush per commit.
// Concurrent commits share one record and one fdatasync (group commit,
// without a timer: the first writer commits at once with everything
// queued; SyncEveryCommit and SyncBatch are the same here, since a refused
// transaction is rolled back alone and nothing is re-run). The write lock
// is held until the record is durable, so no reader sees a commit a crash
// could take back (readers wait while a commit is written and synced). The
// file grows in chunks of zeros written ahead (one fsync per chunk of 1 to
// 4 MiB), so a commit overwrites written blocks and its fdatasync has no
// file size, block map or extent state to record, only the data (about 30%
// faster than fallocate'd space and 50% faster than appending, measured);
// the log ends at the first all-zero record header, and Close trims the
// rest. Open checks the header and replays every record in order,
// verifying each checksum and sequence number. When the file outgrows
// max(64 MiB, twice the live data), a background compaction writes the
// live data as a snapshot to a temporary file, carries over the records
// committed meanwhile, fsyncs, renames it over the store and fsyncs the
// directory (kv_log_compact.go, where its crash safety is argued).
//
// The cost is memory, less so for a file. Every key stays in the
// B-trees, but the values of the buckets that grow with runs and steps
// (runs, events, steps, hooks, stream chunks; 64 bytes or more) stay in
// memory only while they are among the newest 1 MiB of such values
// committed: then the tree keeps where the value is in the file (offset,
// length, CRC-32C: 16 bytes after the key), and a read fetches it and
// checks it, so bytes changed on disk since are ErrCorrupt (also
// world.ErrCorrupt) naming the bucket and key, never other data (spill.go).
// Open keeps every such value on disk. What a store keeps in memory is
// then its keys: about 1.2 KB per serial step of a file store (nine keys
// of 8 to 72 bytes, most spelling out the run and step IDs, and their
// B-tree slots, 16 bytes each, about half of them empty; measured:
// BenchmarkFootprint10000 in bench/peers, one 10,000-step run), 2.2 KB in
// memory, and events are never deleted. The decoded copies of the runs
// and open steps the last commits wrote are kept too, up to 16,384 of
// each or 8 MiB of their stored values (decoded.go). Open
// also reads the whole file at once, briefly holding up to max(64 MiB,
// twice the live data) more. So a long-running worker's heap grows with
// every run it adds, by design, every entry a run's own data. Nothing else
// in the World grows with use: the one structure that could, the channels
// StreamChanged keeps for streams being watched, is bounded
// (maxStreamWatches, 4,096 streams; a closed stream keeps none).
//
// # The retired bbolt format
//
// Earlier versions could also keep a store in a bbolt file. bbolt keeps no
// checksum of its data: of 1,200 random single-bit flips of such a store,
// 70 were read as other data without an error, and some crashed the
// process. Open refuses a bbolt store with ErrBoltFormat, naming the way
// out: MigrateBolt (skein store migrate) copies its runs to a new log
// store, reading the old file under guards (its meta pages and size
// checked first, every bucket read with bbolt's panics and memory faults
// turned into a note, every entry checked before it is copied) and saying
// what it skipped (migrate_bolt.go). The recognition of a bbolt file by its
// first page, and those guards, are all that remains of the format.
//
// # Durability and damaged files
//
// Config.Sync chooses between SyncEveryCommit (default: a commit is synced
// before the call returns), SyncBatch (the same: every synced commit is a
// group commit) and SyncNone (no sync; survives a process crash, not a
// machine crash). A missing file is built under a temporary name and linked
// into place, so the path never names a half-made store. A file another
// process holds fails with ErrLocked after Config.LockTimeout.
//
// A truncated or damaged file, or one that is not a localworld store, fails
// Open with ErrCorrupt naming the file, and nothing is written to it. The
// header and every record must be intact and in
// sequence; the error names the offset of the first bad one. One case is
// told apart: when the bad record is the last thing in the file (nothing
// intact follows it), it may be what a crash in the middle of a write
// leaves, a commit that was never acknowledged (a synced commit writes
// only after the previous one is durable, so only the last write can be
// torn). Open then fails with ErrTornTail (which is also ErrCorrupt) and a
// message that says so; with Config.RepairTornTail it truncates the file
// after the last whole record instead, logging what it dropped. Two things
// tell a torn write from damage there. A record is written into space
// allocated (and synced) ahead of it, so a crash leaves the file's size: a
// file that ends inside its last record was cut short (truncated, copied
// incompletely), and Open says so (ErrCorrupt, not ErrTornTail). And Close
// records in the header where the log ended (its closed end): a bad
// record, or an end of file, before that offset is damage too, whatever
// follows. Damage is never repaired, and never advised to be. Like any log
// that finds its end by checksums (SQLite's WAL, say), the log cannot tell
// committed records that a device zeroed at the very end of the file from
// space allocated ahead, nor a file cut at a record boundary after a crash
// (before the next Close) from one the crash left so: a cut after a Close
// is always found. RELIABILITY.md ("Tampering and corruption") has the
// random bit-flip and truncation sweep (TestLogFlipSweep).
// A stored record that does not decode is reported as ErrCorrupt naming its
// bucket and key.
//
// Holding the file's lock proves that no other process has the store open,
// so the run leases and the step execution leases in it belong to a process
// that is gone: Open sets every unexpired one to expire now, in one
// transaction, logged at info, and a restart after a crash resumes at once
// instead of waiting out a 30-second run lease or a one-minute step lease.
//
// # Reading a store another process holds
//
// Config.ReadOnly opens a log store without the lock, to look at it while a
// worker runs, or without keeping a worker from starting (the skein CLI
// reads every store so). It never
// writes: every write fails with ErrReadOnly, and Open neither expires
// leases nor releases messages. Before each read it replays the records
// appended since the last one, stopping at the first that is not whole and
// intact (the writer appends each record with one write call, so that is
// one being written, read next time); when the path names another file
// than the one it has open, a compaction renamed a new log into place, and
// it replays that one from its start. Either file is a prefix of the same
// history, so a read sees the store as it was at some commit, never a mix.
// An incomplete last record found when the file is read from its start is
// reported by World.TornTail while a process holds the store (a reader
// that finds it again a moment later has a store a crash cut short); with
// no process holding it, Open fails with it, as Open with the lock does.
// A file cut short, or damaged before its closed end, fails Open.
//
// # Layout
//
// Each bucket is an ordered keyspace (a B-tree). In keys,
// s() is a string with a uvarint length prefix (so a prefix scan over it
// never matches a longer string), u64() and seq() are big-endian, t() is a
// time in Unix nanoseconds (big-endian, sign bit flipped so byte order is
// time order), and raw() is bytes as they are. Index values are empty.
// Events, steps and runs are stored in a binary encoding (codec.go: a
// version byte, then the fields in a fixed order; IDs of the World's form
// as 17 bytes, times as nanoseconds, payloads as the compact JSON every
// read returns), or as JSON when a record holds what the binary form does
// not hold exactly (a string that is not UTF-8, a time with a zone
// offset); other records are JSON. A record that does not decode whole is
// ErrCorrupt naming its bucket and key. Layout 1, of earlier versions, has
// JSON records throughout: this version reads them as they are, and marks
// such a store as layout 2 when it opens it to write, so an earlier
// version refuses it (a layout it does not know) rather than reading
// binary records as damage.
//
//	meta                      "format" -> "skein-localworld/2" (or /1)
//	runs                      raw(runID) -> Run
//	runs_by_time              t(createdAt) raw(runID)                       newest first = reverse scan
//	runs_by_name              s(workflowName) t(createdAt) raw(runID)
//	runs_by_status            s(status) t(createdAt) raw(runID)             moved on status change
//	runs_by_name_status       s(workflowName) s(status) t(createdAt) raw(runID)
//	run_idempotency           raw(idempotencyKey) -> runID
//	events                    s(runID) seq(seq) -> Event                    dense per run
//	events_by_correlation     s(correlationID) s(runID) seq(first) -> later seqs   up to 16 events an entry (corr.go)
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
//	commits                   u64(n) -> s(runID) seq(first) seq(last)       every Append, in commit order
//
// Append runs all the events of a commit in one write transaction: for each
// event it reads the run, the step, hook or wait the correlation ID names,
// the token's holder and the idempotency key's run, calls world.Apply, and
// writes the event and the effect (entities, indexes, a disposed hook and its
// token; when the run ends, its hooks, their tokens and its waits). The
// first refusal rolls the commit back. The run and step entities a commit
// writes are kept decoded beside the stored bytes (decoded.go), and the
// next commit's read of the same bytes (the same slice: values are never
// changed in place) takes them without decoding them again.
//
// # Watching
//
// Every Append that appends events also records the commit in the commits
// bucket, numbered one after the newest (one writer at a time makes that
// a total order of the store's commits), and wakes the World's watchers
// once the commit is durable: no polling. A watch of every run reads the
// commits after its cursor (a commit number and the last event of it
// delivered) and their events, so its cursor is exact across runs and
// resumes after a restart; a watch of one run reads the run's events
// after its sequence number. A World opened ReadOnly learns of another
// process's commits only by reading the file, so its watches look every
// 5ms (or the watch's WatchParams.PollMin), backing off to 100ms (PollMax) while
// nothing comes: a look is a stat of the file and a read of what was
// appended. A store written before the commits bucket existed has no entry
// for its older commits: an every-run watch starts at the first commit
// made since.
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
// The World's clock (time.Now; Skein's tests give their own) is the only
// clock: createdAt, leases, delays, visibility and
// dedupe expiry all read it. Receive converts a due time into a real timer,
// so with a frozen clock a delayed message never becomes due.
package localworld
