package localworld

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// The World's logic is written once over kvStore, a small ordered key-value
// store with serializable transactions, and runs unchanged on a B-tree in
// memory (kv_mem.go) and on the same B-trees backed by a log file
// (kv_log.go).

// kvStore runs transactions. update runs fn in a write transaction and
// commits it when fn returns nil, or rolls everything back when it returns an
// error. fn must not have effects outside the transaction.
type kvStore interface {
	view(fn func(tx kvTx) error) error
	update(fn func(tx kvTx) error) error
	close() error
}

// kvTx is one transaction's view of the store. A write transaction sees its
// own writes. Slices returned by get and passed to scan's callback are valid
// only until the transaction ends and must not be modified; put stores
// copies of its arguments, which the caller may reuse once it returns.
//
// A log store reads some values from its file (spill.go): get and scan
// fail with ErrCorrupt when those bytes do not check.
type kvTx interface {
	// get returns the value stored under key, nil when there is none.
	get(b bucketID, key []byte) ([]byte, error)
	// version identifies the value stored under key without reading it:
	// the same pointer while the store holds that very value, nil when
	// there is none (decoded.go); and the value's length.
	version(b bucketID, key []byte) (*byte, int)
	put(b bucketID, key, value []byte) error
	del(b bucketID, key []byte) error
	// encoder is the store's buffer to encode a value to put in
	// (putEncoded); only a write transaction has one.
	encoder() *encoder
	// scan calls fn for each key in [lo, hi), ascending, or descending when
	// desc. A nil hi means no upper bound. fn returns false to stop. fn must
	// not write to the transaction.
	scan(b bucketID, lo, hi []byte, desc bool, fn func(k, v []byte) bool) error
}

// bucketID names a bucket: a separate ordered keyspace.
type bucketID uint8

// The buckets. doc.go describes the key layout of each. Their numbers are
// part of the log format (a record names a bucket by its number): add new
// buckets at the end, never reorder or remove one.
const (
	bMeta bucketID = iota
	bRuns
	bRunsByTime
	bRunsByName
	bRunsByStatus
	bRunsByNameStatus
	bRunIdem
	bEvents
	bEventsByCorr
	bSteps
	bStepsByRun
	bHooks
	bHooksByTime
	bHooksByRun
	bHookTokens
	bWaits
	bLeases
	bQueueMsgs
	bQueueVisible
	bQueueIdem
	bQueueIdemExpiry
	bStreams
	bStreamChunks
	bCommits
	numBuckets
)

// bucketNames name the buckets in messages, and were the bucket names of
// the retired bbolt format, which MigrateBolt reads.
var bucketNames = [numBuckets]string{
	bMeta:             "meta",
	bRuns:             "runs",
	bRunsByTime:       "runs_by_time",
	bRunsByName:       "runs_by_name",
	bRunsByStatus:     "runs_by_status",
	bRunsByNameStatus: "runs_by_name_status",
	bRunIdem:          "run_idempotency",
	bEvents:           "events",
	bEventsByCorr:     "events_by_correlation",
	bSteps:            "steps",
	bStepsByRun:       "steps_by_run",
	bHooks:            "hooks",
	bHooksByTime:      "hooks_by_time",
	bHooksByRun:       "hooks_by_run",
	bHookTokens:       "hook_tokens",
	bWaits:            "waits",
	bLeases:           "leases",
	bQueueMsgs:        "queue_messages",
	bQueueVisible:     "queue_visible",
	bQueueIdem:        "queue_idempotency",
	bQueueIdemExpiry:  "queue_idempotency_expiry",
	bStreams:          "streams",
	bStreamChunks:     "stream_chunks",
	bCommits:          "commits",
}

func (b bucketID) String() string {
	if b < numBuckets {
		return bucketNames[b]
	}
	return fmt.Sprintf("bucket(%d)", uint8(b))
}

// maxKeySize bounds a key (bbolt's limit, kept so that a store migrated
// from bbolt and a new one take the same keys).
const maxKeySize = 32768

var errKeyTooLarge = errors.New("key too large")

func checkKey(key []byte) error {
	if len(key) == 0 {
		return errors.New("empty key")
	}
	if len(key) > maxKeySize {
		return errKeyTooLarge
	}
	return nil
}

// key builds a composite key. Strings are length-prefixed (str) so that a
// prefix scan over one component never matches a longer string; integers and
// times are big-endian so that byte order is numeric order; raw appends bytes
// as they are, for a trailing component or one whose byte order matters.
type key []byte

func newKey() key { return make(key, 0, 64) }

func (k key) str(s string) key {
	k = binary.AppendUvarint(k, uint64(len(s)))
	return append(k, s...)
}

func (k key) raw(s string) key { return append(k, s...) }

func (k key) u64(v uint64) key { return binary.BigEndian.AppendUint64(k, v) }

func (k key) seq(v int64) key { return k.u64(uint64(v)) }

// time encodes t so that byte order is chronological, including before 1970.
func (k key) time(t time.Time) key { return k.u64(timeBits(t)) }

func timeBits(t time.Time) uint64 { return uint64(t.UnixNano()) ^ (1 << 63) }

func bitsTime(v uint64) time.Time { return time.Unix(0, int64(v^(1<<63))).UTC() }

// readStr reads a length-prefixed string at the start of b and returns it and
// the rest.
func readStr(b []byte) (string, []byte, bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return "", nil, false
	}
	return string(b[w : w+int(n)]), b[w+int(n):], true
}

// readU64 reads a big-endian integer at the start of b.
func readU64(b []byte) (uint64, []byte, bool) {
	if len(b) < 8 {
		return 0, nil, false
	}
	return binary.BigEndian.Uint64(b), b[8:], true
}

// prefixEnd returns the smallest key greater than every key starting with p,
// or nil when there is none.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// after returns the smallest key greater than k.
func after(k []byte) []byte {
	out := make([]byte, len(k)+1)
	copy(out, k)
	return out
}
