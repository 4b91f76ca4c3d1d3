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
// # Table
//
// One table, keys pk and sk (strings), pay per request, TTL on "ttl". Items:
//
//	pk                  sk                  item
//	r#<runID>           e#<prev, 20 digits> a commit: the events of one Append (n, ls = prev+n,
//	                                        time, payload d: the events, ids, types, correlation IDs;
//	                                        u: the run's lazy steps, step ID -> their commit's prev;
//	                                        nh, nw: the run's active hooks and waits after it;
//	                                        rs: the run's status after it; its rest: rda
//	                                        deactivated at, rcu cleanup state; its compensation:
//	                                        rcp 1 when its end asked for it, rco rcr rcs rcf the
//	                                        compensations owed, running, succeeded, failed)
//	r#<runID>           e~                  run head: status, created/started/completed times,
//	                                        workflow wf, code version ver (never changes),
//	                                        GSI keys g1 g2 g3 gsk, streams flag os
//	r#<runID>           e~b                 run body: input, execution context, attributes,
//	                                        idempotency key; output, error, code, reason at the end
//	r#<runID>           s#<stepID>          step (none yet for a lazy step, see Lazy steps); a step
//	                                        that declared a compensation: cn its name, cat cai
//	                                        attempts and interrupted ones, cra clx csa cea retry,
//	                                        lease, start and end times, cerr its last error
//	r#<runID>           w#<waitID>          wait
//	r#<runID>           h#<hookID>          the run's link to an active hook (a copy of it)
//	r#<runID>           o#<name>            a stream's marker: the run has a stream of that name
//	r#<runID>           a#<key>             a run attribute, for gs4: g4 = "at#<key>=<value>", gsk
//	r#<runID>           lease               run lease: owner lo, expiry lx
//	h#<hookID>          hook                active hook, by ID (hook IDs are unique across runs)
//	t#<sha256(token)>   tok                 the token's claim: a copy of the hook holding it
//	i#<sha256(key)>     idem                a run idempotency key: the run it started
//	q#<sha256(key)>     q                   a queue idempotency key: message ID, claim, state, TTL
//	skein               schema              the table's format: v = SchemaVersion
//
// The schema item is written by CreateTable (or, on an empty table created
// otherwise, by the first World that checks it); New's check
// (World.CheckSchema, unless Config.SkipCheck) refuses a table of another
// version, or one holding runs without the item, with a *SchemaError:
// formats are not migrated before 1.0, so every item the World reads has
// the attributes described here (a commit without rs, nh or nw is refused
// as an item of another format).
//
// Why: a run's partition holds everything a commit writes. The events of a
// commit share one item, keyed by the run's last sequence number before the
// commit ("prev"): with attribute_not_exists on that key the item is the
// write fence itself (see Commits), and a serial step writes two items (the
// commit, step k) instead of six: step k+1 is a lazy step. The head holds
// what changes with the status only, so that the commits of a running run
// do not touch it; the body is written at creation and at the end, so that
// a commit's cost does not grow with the run's input. The head and body
// sort right after the commits, so one Query (sk from "e#" to "e~b", newest
// first, limit 3) reads a run with its newest commit, which gives LastSeq,
// UpdatedAt and the status. A Query is read committed, not a snapshot: the
// head it returns may be older or newer than the commit it returns (a
// transaction landing while it runs). So the status, which commits are
// judged on, is the newest commit's own (rs), consistent by construction
// with the LastSeq that fences the next commit. The head's times and the body may lag the
// status for that moment (a GetRun racing a run's end). The global hook,
// token and idempotency items are keyed by what must be unique, so that
// attribute_not_exists makes uniqueness race-free (no read-then-insert
// window). Payload attributes (in, out, err, cerr, ctx,
// attrs, md, d) hold bytes inline (type B) or the S3 key of a claim-checked
// payload (type S).
//
// Four global secondary indexes, all sorted by gsk (created time in
// fixed-width nanoseconds, "#", ID) and holding keys only (gs2 adds st):
//
//	gs1  g1 = "run" | "hook"            all runs newest first; all active hooks in creation order
//	gs2  g2 = "wf#<workflow>"           runs of a workflow (st projected, to filter by status too)
//	gs3  g3 = "st#<status>"             runs in a status
//	gs4  g4 = "at#<key>=<value>"        runs with an attribute (every attribute of every run)
//
// Only run heads, global hook items and attribute items carry index keys,
// and a run's head changes only with its status (pending, running, ended),
// so steps write no index entry.
//
// Run attributes: every attribute of a run is indexed, whatever its key.
// The commit that sets one (run_created with attributes, attribute_set)
// puts its a#<key> item in the same transaction, over the item of the
// key's previous value, so gs4 moves the run from the old value to the new
// one; the body keeps the run's whole set (GetRun), rewritten by such a
// commit. A run holds at most world.MaxAttributes, so a commit writes at
// most that many attribute items. ListRuns by attribute queries gs4
// newest first, reads the runs it names, and applies the workflow and
// status filters to them, reading on until the page is full. The items
// expire with the run (Retention). A table created before gs4 existed
// works as before, except that listing by attribute returns a
// *MissingIndexError: add the index (deploy the current template.yaml, or
// UpdateTable with gs4 on g4 and gsk, keys only); attributes set meanwhile
// have their items and are listed once the index is built. Listings read a page of keys from an index, then the items
// with a strongly consistent BatchGetItem (and each run's newest commit),
// and check the filter again (an index lags its table). ListSteps and a
// run's ListHooks read the run's partition, in ID order: creation order for
// IDs from one monotonic world.IDSource, as the engine's are (an exact
// creation order would need a local secondary index: one more write per
// step). ListEvents reads commits from its cursor, which names the last
// event and its commit (from the start, the run head too: see Priming);
// ListEventsByCorrelation reads the run's log and keeps the entity's events
// (no index: that would cost a write per event), and needs a RunID.
//
// # Commits
//
// Append judges its events with world.Apply, the state machine every World
// shares, on a snapshot of the run, then writes everything in one
// TransactWriteItems. The commit is planned by a pure function (plan.go:
// snapshot, events, their IDs and the time in; the transaction's items
// with their conditions and the next snapshot out; no I/O), and Append is
// the loop around it: get a snapshot, plan, write, classify the outcome.
// What a snapshot may claim is written down as its invariants (snapshot.go,
// S1 to S8). The transaction holds the commit item, the entities the events change, and
// the run head and body when the status changes. The snapshot is the one
// this World left in its cache at its previous commit to the run, so a run
// driven by one invocation commits with one round trip per serial step
// (step k's completion with step k+1's creation and start: the commit item
// and step k's item) and no read.
// Without a cached snapshot (another process wrote last, or a cold start),
// one Query reads the run and its newest commit, then one TransactGetItems
// the entities the events name. run_created reads nothing: the run's
// absence is a condition. A World that has just read the run's whole log
// (the engine's cold start does) has a snapshot from it: see Priming.
//
// Every assumption of the snapshot is a condition of the transaction:
//
//   - the fence: the commit item's key is the snapshot's last sequence
//     number; every commit after the snapshot was keyed by exactly that
//     number, so attribute_not_exists fails whenever anything of the run
//     changed since (every change to a run's entities is an event);
//   - attribute_not_exists on every item an event creates: steps, waits,
//     the run's head, a hook ID (global), a token, a run idempotency key;
//   - step_started on a running step: its lease expiry lx unchanged (a lease
//     renewal is the one change without an event);
//   - hook_conflict: the token still held by the holder it names.
//
// The comp_* events (world.IsStepEvent) are judged on the step they name,
// like the step_* events, and write its item; a compensation has no lease
// renewal, so the fence alone decides between two concurrent outcomes of
// one compensation (a second comp_succeeded is refused, never recorded
// twice). The run's compensation counts, like its status and its rest,
// travel on every commit item, so run_deactivated is judged on the counts
// the fence checked. Items written before compensation existed lack these
// attributes and read as "no compensation": no format change.
//
// A cancelled transaction is read reason by reason (CancellationReasons,
// with the old items where needed): the run's head on run_created is the
// run's *world.RunExistsError; the idempotency item names the run that took
// the key; a token item names its holder, which is read: a live holder
// turns the hook_created into a hook_conflict naming the holder's run (a
// second transaction), a holder whose run has ended (a clean-up that did
// not finish) is taken over. A commit found at the fence that carries this
// Append's own event IDs (minted once per Append) is this Append's, landed
// by an attempt whose answer was lost: Append reports it done. Anything
// else means the snapshot was stale: the commit is judged again on a fresh
// read, so a refusal (404, 409, 410, 425) is always world.Apply's on the
// current state. TransactionConflict and throttling inside a transaction
// are retried with backoff. Commits of one run from one process are
// serialized in memory; across processes the conditions decide.
//
// A transaction takes 100 items, so a commit whose events write more (a
// fan-out of 150 steps) is refused (world.ErrInvalid). AppendFits
// (world.AppendLimiter) says how many events, from the first, one Append
// takes, counting from the events alone: the commit item, the run's head,
// body and idempotency key for run events, one item per step and wait,
// three per hook (see fits.go); the engine appends a wider commit in
// several fenced Appends.
//
// A run's end deletes its active hooks (their three items) and its waits,
// found in the snapshot when it knows them all, otherwise with two strongly
// consistent queries of the run's partition. A snapshot knows them all when
// this World has seen the run from its creation or read its whole log
// (Priming), or when it knows as many as the run has: every commit item
// counts the run's active hooks and its waits after it (nh, nw), the
// snapshot's count plus those its events create, minus those they delete (0
// after run_created, and after a run's end, which deletes them all). The
// counts are exact by induction, since each commit is judged and fenced on
// the snapshot it counts from. So a World that reads a run
// afresh (another process wrote last) ends it without the queries when it
// has no hooks or waits left. The deletions go into the terminal commit's
// transaction as far as they fit (100 items in all); the rest follow it as
// conditional deletes. That leaves a window only for runs ending with more
// than about 90 hooks and waits, or after a crash between the two:
// meanwhile GetHook, ListHooks and GetWait may still return them, but
// Append judges a finished run's hooks and waits absent, and a token held
// by a hook of a finished run is taken over.
//
// # Lazy steps
//
// A commit that creates a step and leaves it running (step_created with
// step_started: a serial step's step k+1) writes no item for it when the
// committing World can prove the step absent without reading or checking
// its item: the World created the run and made every commit since, or read
// the run's whole log (Priming), and keeps every step ID of it (or a fresh
// read found the step absent, which the fence keeps true). The step's state
// is then its events in that commit, and the commit item lists it in u
// (step ID -> the commit's key), as every later commit does (it carries the
// list forward) until a commit changes the step: that commit writes the
// step's first item, conditioned on its absence, and drops it from the
// list. At most 4 steps are lazy at a time; others get their item at
// creation. A step's state is its item when there is one, else, when the
// newest commit lists it, the replay with world.Apply of its events in the
// commit the list names; else the step does not exist. So an absent item is
// never the whole proof of absence: step_created also needs the step
// missing from the snapshot's list.
//
// RenewStepLease on a lazy step writes its item (a conditional put, on its
// absence) with the renewed lease; the list may then still name the step,
// and the item wins. A commit judged on the lazy state conditions its
// write of the item on its absence, so a renewal it did not see cancels
// it, as the lease condition does for a step that has an item; step_started
// is refused (StepLeased) or taken over exactly as before.
//
// RenewStepLease of a compensation attempt (RenewStepLeaseParams.Compensation)
// updates clx on the step's item, which a compensating step always has; a
// comp_started that takes over an attempt conditions its write on the clx it
// judged expired, so it too is judged again after a renewal it did not see.
//
// Reads: GetStep of a step with an item is one GetItem; of a lazy step, a
// GetItem that finds nothing, one Query of the newest commit, and, when the
// step's commit is not the newest, one GetItem of it (BatchGetItem); of an
// absent step, a second GetItem (the item may have been written between the
// two reads). ListSteps reads the newest commit first, then the items, and
// merges the lazy steps without an item into the page. A cold Append that
// names a lazy step reads its commit in the same way when it is not the
// newest, which its load reads anyway.
//
// # Priming
//
// A ListEvents that reads a run's log from its first event to its end in
// one call (the engine's cold start does, right before its first Append)
// reads every commit and, in the same Query, the run head, which sorts
// right after them (its streams flag goes into the snapshot: see Streams).
// The World folds the events with world.Apply, each at the time it was
// recorded, and caches the result as the run's snapshot: the run, every
// step, wait and active hook, every step ID, as complete as the snapshot of
// a World that made every commit itself. The engine's first Append then
// reads nothing (and its new step is lazy), and the run's end needs no
// query for hooks and waits: the message that runs a one-step workflow on a
// cold Lambda makes one Query and two TransactWriteItems besides its lease,
// where it made five reads.
//
// Why the fold is the run's state: a commit item is never changed once
// written (Retention only adds ttl); every change to a run's entities is
// an event of a commit, but a step lease renewal; and the entities a
// commit writes are world.Apply's effects of its events, at the times they
// carry, on the state the commits before it left. A Query is only read
// committed (it may see part of a transaction, or a commit that landed
// while it ran without the one before it), so nothing is trusted but each
// commit item: the commits read must chain from the first (keyed 0, each
// keyed by the last sequence number of the one before, holding its count
// of events), the fold must record every event again as it was (same
// type, same sequence number), and the head must exist and agree with the
// fold (status, creation time); otherwise nothing is cached. Commits that
// landed after those read make the snapshot old, not wrong: the next
// commit is fenced on its LastSeq, as with any cached snapshot, and a lease
// renewal it does not know is caught by the lease conditions (see Commits
// and Lazy steps). A later snapshot already cached is kept, and so is a
// complete one as new; an incomplete one as new (this World read the run
// for a commit of its own, as a background step's executor does) lends the
// fold what it may know better, its steps (a lease it renewed) and its
// lazy steps (one whose item a renewal wrote).
//
// A ListEvents that reads back from the end of the log (its first page,
// newest first: the engine's lease holder takes in so what background steps
// appended) brings a complete cached snapshot forward when it reaches the
// snapshot's own last sequence number: the commits since must chain from it
// to the newest read, and are folded onto it, the result complete as the
// snapshot was. So a lease holder commits after background steps without
// reading the run again. The fold's JSON payloads are the events', which a
// commit stores re-encoded (compact), as lazy steps' states already are.
//
// # Watching
//
// World is a world.Watcher. A watch of one run polls the run's partition:
// it places itself with one strongly consistent Query (the commit holding
// the cursor's event, newest first, limit 1), then each look is one
// eventually consistent Query of the commits from the next expected key
// on (sk from e#<last sequence number delivered> up, limit 25). A commit
// is delivered only when it chains from the one before (its key is the
// previous commit's last sequence number), so a replica that shows a
// commit before the one it follows delays it to the next look and never
// makes a gap; commit items never change, so a look never delivers one
// twice. The wait between looks starts at Config.WatchPollMin (50ms)
// after a look that found something and doubles while the run is idle up
// to Config.WatchPollMax (2s); the watch ends after the run's terminal
// event.
//
// Cost and latency: an idle look is a Query that returns nothing, 0.5 read
// request units ($0.125 per million on demand): about 900 units, $0.0001,
// per watched idle run per hour at the 2s cap; a look that finds a commit
// reads it (0.5 units per 4 KB). An event reaches the watcher within one
// wait plus a Query's round trip (about 10ms in a region): 50ms on a busy
// run, up to 2s on one that was idle.
//
// A watch of every run keeps a position per run (its cursor: the runs not
// at rest, and those created in the 30 seconds before its last look,
// about 60 bytes each, and the time of that look). A run it follows is
// followed until its run_deactivated, not just its terminal event, so what
// the run records after its end (late step results, its cleanup, its
// compensations) is delivered too. Each look lists the
// runs pending, running and held (three keys-only Queries of gs3) and
// those created since the last look minus 30 seconds (gs1), and reads the
// partition of each listed or tracked run from its position as above: 4
// index Queries and one Query per run in flight, 0.5 units each when
// idle. It looks at most once a second, backing off to 5s. Its guarantee
// is per run (every event after the cursor, in order, once); across runs
// there is no order, and a run is found as long as the index lists it
// within 30 seconds of the creation time it records (the skew between
// writers' clocks and the index's lag); one found later is delivered from
// its first event, never skipped. Its cost grows with the runs in flight,
// which suits a dashboard, not a table with thousands of runs in flight.
//
// Why not DynamoDB Streams: a stream has no per-key read. A reader must
// list the stream's shards (DescribeStream), follow them as they split
// and roll over (every few hours), hold a shard iterator for each (it
// expires after 15 minutes) and read every shard with GetRecords, which
// returns the writes to every run in the table: following one run costs
// as much as following all of them, and the reads grow with the table's
// write traffic, not with what is watched. AWS advises at most two
// concurrent readers per shard (more are throttled), so every watcher
// beyond two (a UI per operator, a CLI) would need a fan-out service of
// its own (Lambda, Kinesis). Records typically appear within a second,
// so the latency is not better than a 50ms poll, records are kept 24
// hours only (a cursor older than that could not resume), the stream
// costs $0.02 per 100,000 read request units besides, and it must be
// enabled on the table (a template change). DynamoDB Local does emulate
// Streams, so testing was not the obstacle. Polling the run's partition
// costs per watched run and look, needs no new resource or permission
// beyond Query on the table, and resumes from any cursor for as long as
// the run's items live.
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
// finds an item whose payload is gone: it gets a *world.ExpiredError
// (world.ErrGone) naming the run and the payload. template.yaml derives both
// from one parameter, RetentionDays.
//
// # Streams
//
// Output streams are S3 objects (package streams). The default Streamer
// registers a stream in the run's partition before it writes the stream's
// first object from a process (streams.Registry): it puts the stream's
// marker (sk "o#<name>", on condition of its absence) and sets the run
// head's flag os to 1 (on condition that it exists: run_created writes it
// as 0), both at once; the flag only for a process's first stream of the
// run. A marker that was absent tells the writer that the stream has no
// object yet, as every writer registers first, so its first put needs no
// S3 listing. ListStreams reads the flag (one GetItem) and, when it is 1,
// the markers (one Query), where it listed S3. The default Streamer bounds
// each stream to Limits.MaxStreamBytes, its count carried in its objects'
// metadata and claimed with their conditional puts, so that every process
// shares it (see package streams, Bytes bound).
//
// A run's end is committed on the condition that the flag is still 0 when
// the World believes the run has no stream (the head it read or created
// said so, and it registered none since); a stream another process opened
// meanwhile fails that condition, and the end is judged again on a fresh
// read. After the end, the World so knows that the run had no stream when
// it ended, and ListStreams, which the engine calls after every run's end
// to close the run's streams, answers from the cache without a request. A
// stream first written after the end is not in that answer; a listing made
// a moment before the write would have missed it too.
//
// A run ID without a run is listed from S3: its streams have no marker.
//
// # Claim check
//
// A payload over Config.ClaimCheckThreshold (64 KiB) is stored in S3 under
// <prefix>blobs/<runID>/<sha256> (content-addressed: a retried commit
// uploads nothing new) before the transaction, and the item holds the key.
// A payload below the threshold also moves when its item would exceed
// MaxItemBytes (350 KB, under DynamoDB's 400 KB) or the transaction 3.5 MB
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
// PendingGrace, then is taken over by the next Enqueue, which sends. Receive long-polls; Release is ChangeMessageVisibility; Attempt is
// ApproximateReceiveCount. Bodies that are not SQS-safe text travel
// base64-encoded (a message attribute says so).
//
// SQS goes on with a long poll whose client has gone: the next message sent
// is handed to it and stays hidden for the visibility, received by no one.
// So Receive never cuts its SQS call short when its context is cancelled
// or the World closes: it lets the call end (within its wait), makes
// visible again at once what the call brought, and then returns the
// context's error (world.ErrClosed when closing). A program that stops a
// workflow.Worker and waits for Run to return thus leaves nothing hidden;
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
