// Package streams is a world.Streamer on S3: a run's output streams as
// objects under <prefix><runID>/<name>/.
//
// # Layout
//
// Each object holds consecutive chunks of one stream; its key ends with the
// index of its first chunk in 16 digits, so a listing returns a stream in
// order. The body is "SKS3", the chunk count and the chunk lengths as
// uvarints, the chunks, then a CRC-32C over the object's place (its run
// ID, stream name and first index, which the key also names) and all
// that; the place is not stored, and the count is also object metadata.
//
// The close marker is an object of no chunks at the stream's tail index:
// "SKS3", a chunk count of 0 and a CRC-32C over its place and the
// stream's data bytes (which its metadata records, as every object's
// does). Its place records the stream's chunk count, since indices are
// dense. It is 9 bytes, a size no object of chunks has (one empty chunk
// takes 10), so a listing tells it from data by its size alone; a reader
// takes the stream for closed only once the marker, read, verifies at its
// place.
//
// A read checks every object it fetches against the place it asked for:
// an object whose checksum, layout or chunk count (body against metadata)
// does not agree fails ReadStream with world.ErrCorrupt naming the object,
// and no chunk of it is returned. So does an object copied or moved, with
// its metadata, to another run, stream or index: its checksum binds it to
// where it was written. Objects of the earlier layouts ("SKS1", without a
// checksum; "SKS2", whose checksum covered the body alone and so could
// not tell a moved object), neither in a release, are refused the same
// way.
//
// A read also checks the stream's shape, from its listing and the objects
// it fetches: each object must begin where the one before it ends, no
// object may follow the close marker, and the marker must verify at its
// place and record the data bytes the object before it records. An empty
// object is refused wherever it is listed: earlier versions, none in a
// release, closed a stream with one, which nothing could tell from a data
// object truncated to nothing, so a stream cut short by damage or a tool
// read as complete; a stream they closed is refused with a message that
// says so. A missing object in the middle (an index gap),
// an object after the marker, a marker that does not verify, or one at
// the wrong index or with other bytes than the stream holds, fails
// ReadStream (and StreamInfo, and writes, where their listing shows it)
// with world.ErrCorrupt naming an object: never a shorter stream, never
// the stream's end.
//
// # Bytes bound
//
// Each object's metadata also records the stream's data bytes through it
// (the sum of its chunks' lengths and all before, less each chunk's
// framing: world.WriteStreamParams.DataBytes). A writer learns the
// count where it learns the tail (its own last put, or the HEAD of the
// last object), and refuses a write that would take the stream past
// Config.MaxStreamBytes with a *world.LimitError before putting anything.
// The count is claimed with the tail: a writer whose count was stale
// loses the conditional put, learns the new count, and judges its write
// again, so writers in any number of processes share one bound and a
// write costs no request more. A write of more chunks than an object
// holds is judged whole before its first object; should writers of
// another process fill the stream between its objects, its rest is
// refused with its head written. An object of a version that did not
// record the count counts as none (the stream counts from its next
// object); a count that does not parse is world.ErrCorrupt.
//
// # Index allocation: S3 conditional puts
//
// A writer puts the object for its chunks at the stream's tail with
// If-None-Match: *. Two writers at one tail cannot both succeed; the loser
// (412 PreconditionFailed, or 409 ConditionalRequestConflict) lists from the
// tail it knew, reads the count of the last object (HEAD) and tries the new
// tail. Because objects are immutable and dense, any tail a writer computes
// is the start of an object or the true tail, so a stale writer always
// collides and never overlaps. The close marker takes the tail slot the same
// way, so a write racing a close either lands before it or finds the stream
// closed (world.ErrConflict): no write can follow the close.
//
// Why S3 and not a DynamoDB counter: a counter allocates indices before the
// data exists, and a writer that dies between the two leaves a hole every
// reader waits at forever; a counter plus a transaction fixes that at the
// price of a DynamoDB write on top of every PUT. With conditional puts a
// chunk is written exactly when its index is claimed, one request per write
// in the common case (the tail is cached per stream). moto_server 5.2.5,
// the test stack's S3, implements If-None-Match: 100 rounds of 32 concurrent
// conditional puts on one key gave exactly one winner each, and the
// two-process conformance run races writers through it.
//
// A retried put that meets its own first attempt (stored, answer lost) is
// recognized by a write ID in the object's metadata, so a chunk is never
// written twice.
//
// # Registry
//
// A Streamer with a Config.Registry (dynamoworld's records streams in its
// table) registers a stream before it writes the stream's first object
// from this process, and writes nothing when that fails. A stream the
// Registry reports new has no object yet, since every writer registers
// first: its tail is 0 without a listing, and a new stream costs its PUTs
// alone. A stream written by a Streamer without the Registry can make that
// report wrong; the conditional put then refuses index 0 and the writer
// lists, as after any lost race. The Streamer's ListStreams lists S3
// either way; dynamoworld answers its own from the table. The Registry is
// also where a run's streams are counted (world.Limits.MaxStreams): a
// stream it has no room for is refused with its *world.LimitError before
// anything is put. A Streamer without one counts no streams.
//
// # Coalescing
//
// Writes to one stream from one process queue up; whoever gets the stream
// puts everything queued as one object (up to 1,000 chunks), so
// a burst of small writes costs one PUT and each write stays contiguous. A
// write of more than 1,000 chunks spans objects and is
// contiguous against writers in the same process only.
//
// # Reads
//
// ReadStream lists from the object that may hold its start (an object holds
// at most its writer's bound of chunks, 1,000; when none listed does, as
// when a writer's bound was larger than this reader's, it lists again from the
// stream's first object), then GETs the objects the page needs,
// and the close marker when the page may reach it: the page that ends a
// closed stream costs one GET of the 9-byte marker more (in parallel with
// its other GETs), other pages nothing more. A negative start is resolved
// from the tail first. StreamInfo lists from the last tail this process
// saw and HEADs the last object, or GETs the close marker: one LIST and
// one request, closed or not. ListStreams
// lists the run's prefix with a delimiter. Live tails are world.Tail:
// polling with backoff, woken at once by writes through the same Streamer
// (StreamChanged). Keys need no special characters, so path-style endpoints
// (emulators) work as virtual-hosted ones do.
package streams
