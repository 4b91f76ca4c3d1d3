// Package dynamoworld is Skein's World on AWS: the event log and its
// entities in one DynamoDB table, the queue on SQS, payloads over a
// threshold and output streams on S3 (package streams).
//
//	clients := dynamoworld.NewClients(awsCfg, dynamoworld.ClientOptions{})
//	w, err := dynamoworld.New(ctx, dynamoworld.Config{
//		DynamoDB: clients.DynamoDB, SQS: clients.SQS, S3: clients.S3,
//		Table: "skein", QueueURL: queueURL, Bucket: "my-skein-bucket",
//	})
//
// New checks that the table, queue and bucket exist and names the one that
// does not. CreateResources makes them for tests and development.
//
// This documentation says what a user of the package needs. The design
// behind it (the table's items and why, how a commit is fenced and judged,
// lazy steps, priming, what a watch costs, stream registration) is in the
// repository's docs/dynamoworld.md, under the same section names.
//
// # Table
//
// One table, keys pk and sk (strings), pay per request, TTL on "ttl": a
// run's partition (pk r#<runID>) holds its commits (all the events of one
// Append in one item), its head and body, its steps, waits, links to its
// hooks, stream markers and their count, attributes and lease; global
// items keep hook IDs, tokens and idempotency keys unique. Four keys-only
// global secondary indexes list runs (all, by workflow, by status, by
// attribute: gs4) and active hooks. CreateResources (CreateTable) makes
// the table as template.yaml does.
//
// The table records its format (SchemaVersion) in one item. New's check
// (World.CheckSchema) refuses a table of another
// version, or one holding runs without the item, with a *SchemaError:
// formats are not migrated before 1.0. A table created before gs4 existed
// works as before, except that listing runs by attribute returns a
// *SchemaError naming the index (Index): add it (deploy the current
// template.yaml, or UpdateTable with gs4 on g4 and gsk, keys only);
// attributes set meanwhile are listed once the index is built.
//
// Every stored byte value of an item (a payload, inline or its claim-check
// key, and a held run's error) carries its own CRC-32C in a sibling
// attribute ("k" and the value's name), bound to the item's key, the
// attribute's name and the value, and written or removed in the same
// request as the value; every item carries the mark cs. Reads verify every
// value they return: one that does not match is world.ErrCorrupt naming
// the table, run, item and attribute, never data. A value without its
// checksum is refused on an item with the mark, and on any item of a run
// whose head has it when the read sees the head; items written without
// checksums still read. This catches damage and edits by tools, not
// someone who recomputes the CRC: sealed runs (package encrypt) are for
// that. See RELIABILITY.md, Tampering and corruption.
//
// Every read of a run's events checks that its commits chain from where it
// starts (event 1 or its cursor) to where it stops, and a read that sees
// the run's head checks that the head and the newest commit agree on
// whether the run has ended: a missing commit item is world.ErrCorrupt
// naming the table, run and missing range, never a shorter log, and no
// commit is written over it. The step, wait and hook-link items a commit
// writes carry its last sequence number (wq), so that a commit judged on
// a log whose newest commit was deleted is refused too when it touches an
// entity that commit wrote. A run partition with commits and no head is
// world.ErrCorrupt on every read of the run; a descending read of the log
// checks on its first page that the first commit is there; and every
// commit counts the run's steps (ns), against which a listing of the steps
// whole in one page is checked. See RELIABILITY.md for what is not caught.
//
// # Commits
//
// Append judges its events with world.Apply, the state machine every World
// shares, on a snapshot of the run, and writes them in one
// TransactWriteItems conditioned on everything the snapshot assumed, so a
// refusal (404, 409, 410, 425) is always world.Apply's on the current
// state. A run driven by one invocation commits with one round trip per
// serial step and no read; a World that has just read a run's whole log
// (the engine's cold start does) reads nothing more for its next commit
// (Priming). A transaction takes 100 items, so a commit whose events write
// more (a fan-out of 150 steps) is refused (world.ErrInvalid); AppendFits
// (world.AppendLimiter) says how many events, from the first, one Append
// takes, and the engine appends a wider commit in several fenced Appends.
//
// # Priming
//
// A ListEvents that reads a run's whole log in one call caches the run's
// state folded from it, so the commit that follows reads nothing; one that
// reads back from the end of the log brings a cached state forward. Both
// check what they read (the commits must chain, the fold agree with the
// head) and cache nothing otherwise.
//
// # Watching
//
// World is a world.Watcher: Skein's one polling watch (the one it runs over
// any World that cannot push) reading through the World's own cheaper
// reads (watch.go). A watch of one run polls the run's
// partition with one eventually consistent Query per look (after one
// strongly consistent Query that places its cursor), delivering each commit
// once, in order and without gaps. The wait between looks starts at
// 50ms (or the watch's WatchParams.PollMin) after a look that found
// something and doubles while the run is idle up to 2s (PollMax); the watch ends
// after the run's terminal event. An idle look costs 0.5 read request
// units (about 900 per watched idle run per hour at the 2s cap); an event
// reaches the watcher within one wait plus a Query's round trip.
//
// A watch of every run keeps a position per run and follows each until
// its run_deactivated. Each look lists the runs pending, running and held
// and those created in the last 30 seconds (4 keys-only index Queries:
// no run item is read), then reads
// each one's partition; it looks at most once a second, backing off to
// 5s. Its guarantee is per run (every event after the cursor, in order,
// once); across runs there is no order. Its cost grows with the runs in
// flight, which suits a dashboard, not a table with thousands of runs in
// flight.
//
// # Retention
//
// With Config.Retention, the terminal commit sets ttl (epoch seconds) on
// the run's head and body and the items it writes, then a sweep sets it on
// the run's other items (one write each: about 2 per serial step, so it is
// off by default; see BENCHMARKS.md). DynamoDB's TTL deletes them
// afterwards, for free. Every item of a run so expires at the same time,
// Retention after the run's end; nothing gets a ttl before the end, so a
// live run, however long, never loses an item. Claim-checked payloads and
// streams live under per-run S3 prefixes (<prefix>blobs/<runID>/,
// <prefix>streams/<runID>/) for a lifecycle rule or a sweeper. A lifecycle
// rule counts from each object's write, which may be long before the run's
// end: it must expire objects no sooner than the longest run plus Retention
// (plus the days DynamoDB takes to delete an expired item), or a reader
// finds an item whose payload is gone: it gets a *world.RefusalError of
// world.ErrGone naming the run (Entity) and the payload (Reason). template.yaml derives both
// from one parameter, RetentionDays.
//
// # Streams
//
// Output streams are S3 objects (package streams). The default Streamer
// registers each stream in the run's partition before its first object,
// so ListStreams reads the table (one GetItem, and one Query when the run
// has streams) rather than list S3, and after a run's end answers from the
// World's cache. A run ID without a run is listed from S3.
// Each stream is bounded to Limits.MaxStreamBytes in every process (see
// package streams, Bytes bound), and each run to Limits.MaxStreams
// streams: registering a stream is one transaction, its marker on
// condition that it is new and the run's count of streams (the item oc,
// n) on condition that it is below the bound, so writers in any number
// of processes open exactly the bound and a stream counts once. It
// replaces the marker's own write (no request more; a transaction of two
// items costs four write units where the marker's put cost one, once per
// stream);
// a stream the run has no room for is a *world.LimitError and nothing of
// it is written. The alternative, counting stream bytes against
// MaxRunBytes, would cost a conditional write per chunk. Runs written by
// a version that did not count their streams count from their next
// stream. The Lambda functions (package skeinlambda) use this Streamer
// since the bound came; earlier ones gave the World one without
// registration, so the streams a run had from them are not in the table:
// ListStreams lists from S3 only a run whose head has no flag.
//
// # Claim check
//
// A payload over Config.ClaimCheckThreshold (64 KiB) is stored in S3 under
// <prefix>blobs/<runID>/<sha256> (content-addressed: a retried commit
// uploads nothing new) before the transaction, and the item holds the key.
// A payload below the threshold also moves when its item would exceed
// 350 KB (under DynamoDB's 400 KB) or the transaction 3.5 MB
// (under 4 MB), largest first. Reads fetch claim-checked payloads
// transparently, and check each against its key: an object whose bytes do
// not hash to the sha256 its key names (damaged, or replaced by other
// bytes, sealed or not) fails the read with world.ErrCorrupt naming the
// object and what it held; its bytes are never returned.
//
// # Queue
//
// Enqueue sends to a standard SQS queue. Delays up to 15 minutes are SQS's
// DelaySeconds (rounded up to whole seconds); longer ones need a
// world.Message body, sent with NotBefore set and re-enqueued for the time
// left by whoever receives it early: Receive does it, and a Lambda handler
// must too (the world.Message contract). An IdempotencyKey claims a
// conditional item (TTL: DedupeWindow) before the send and confirms it
// after; only a confirmed claim answers Duplicate. An unconfirmed one (its
// sender may have died before sending) answers world.ErrKeyPending for
// 30s (the pending grace), then is taken over by the next Enqueue, which sends. Receive long-polls; Release is ChangeMessageVisibility; Attempt is
// ApproximateReceiveCount. Bodies that are not SQS-safe text travel
// base64-encoded (a message attribute says so).
//
// SQS goes on with a long poll whose client has gone: the next message sent
// is handed to it and stays hidden for the visibility, received by no one.
// So Receive never cuts its SQS call short when its context is cancelled
// or the World closes: it lets the call end (within its wait), makes
// visible again at once what the call brought, and then returns the
// context's error (world.ErrClosed when closing). A program that stops a
// worker.Worker and waits for Run to return thus leaves nothing hidden;
// one that exits while receives are in flight, or an SQS client of its own
// whose receive is cancelled, can strand messages for their visibility.
//
// # Errors
//
// Errors name the service, the operation and the resource ("dynamoworld:
// DynamoDB TransactWriteItems on table "skein": ...") and wrap the SDK's.
// NewClients' clients retry throttling, 5xx and TransactionConflictException
// with backoff; TransactWriteItems keeps one ClientRequestToken across those
// retries, so a retry after a lost answer is not applied twice.
package dynamoworld
