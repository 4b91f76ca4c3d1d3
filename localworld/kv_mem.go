package localworld

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/google/btree"
)

// memStore is the in-memory kvStore: one B-tree per bucket, guarded by a
// read-write lock. A write transaction holds the lock exclusively and keeps an
// undo log, replayed backwards on rollback; read transactions share the lock.
// Writers are serialized.
type memStore struct {
	mu      sync.RWMutex
	closed  bool
	buckets [numBuckets]*btree.BTreeG[memItem]
	// disk is the log file that values on disk are read from (spill.go),
	// under the store's path, diskName (disk's own name may be a temporary
	// file's, renamed over the store); nil in memory. Guarded by mu:
	// readers hold it shared.
	disk     *os.File
	diskName string
	// damage is the first damage a read found in disk (a value whose bytes
	// changed): the file will not open again as it is, so a log store
	// takes no more writes (logStore.writable).
	damage atomic.Pointer[error]
	// undo is the undo log's array, kept from one write transaction to the
	// next (update serializes them), cleared: a serial step's commit puts
	// about ten values, and growing its undo log from nothing took five
	// allocations (2 KiB) per commit.
	undo []memUndo
	// enc is the write transactions' encoding buffer (putEncoded), made
	// at the first use; guarded by mu held exclusively.
	enc *encoder
}

// maxKeptUndo bounds the undo log's array update keeps for the next
// transaction.
const maxKeptUndo = 256

// memItem is a key and its value, in one array: its first kn bytes are
// the key, then the value; or, for a value on disk in a log store
// (spill.go), where it is in the file. The array is held by its first
// byte and length (16 bytes in a B-tree node where a slice and the
// lengths took 32: a node holds about twice as many slots as items, since
// sequential keys split nodes in halves that stay half full).
type memItem struct {
	p  *byte  // the array's first byte; nil for an empty key
	n  uint32 // the array's length
	kn uint32 // the key's length, with onDiskBit set for a value on disk
}

// onDiskBit marks an item whose value is in the file (keys are at most
// maxKeySize bytes, so the bit is free).
const onDiskBit = 1 << 31

// makeItem is the item of array kv whose first kn bytes are the key.
// Arrays are shorter than 4 GiB: a key is at most maxKeySize bytes and a
// value at most a record's length.
func makeItem(kv []byte, kn int, disk bool) memItem {
	it := memItem{p: unsafe.SliceData(kv), n: uint32(len(kv)), kn: uint32(kn)}
	if disk {
		it.kn |= onDiskBit
	}
	return it
}

// keyItem is the item of key k alone, to look up, delete or bound a scan
// with.
func keyItem(k []byte) memItem { return makeItem(k, len(k), false) }

// array is the item's array: key, then value or reference.
func (it memItem) array() []byte { return unsafe.Slice(it.p, it.n) }

// keyLen is the length of the item's key.
func (it memItem) keyLen() int { return int(it.kn &^ onDiskBit) }

// key is the item's key, capped (appending to it copies).
func (it memItem) key() []byte { n := it.keyLen(); return it.array()[:n:n] }

// val is the value of an item in memory: never nil (an empty value is
// empty, not absent).
func (it memItem) val() []byte { return it.array()[it.keyLen():] }

func memLess(a, b memItem) bool { return bytes.Compare(a.key(), b.key()) < 0 }

var errStoreClosed = errors.New("store closed")

func newMemStore() *memStore {
	s := &memStore{}
	for i := range s.buckets {
		s.buckets[i] = btree.NewG(32, memLess)
	}
	return s
}

func (s *memStore) view(fn func(kvTx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	return fn(&memTx{s: s})
}

func (s *memStore) update(fn func(kvTx) error) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStoreClosed
	}
	tx := &memTx{s: s, writable: true, undo: s.undo}
	defer s.keepUndo(tx)
	defer func() {
		if err != nil {
			tx.rollback()
		}
	}()
	defer func() {
		// A panic in fn must not leave half a transaction behind.
		if r := recover(); r != nil {
			tx.rollback()
			panic(r)
		}
	}()
	return fn(tx)
}

// keepUndo keeps tx's undo log's array for the next write transaction,
// cleared so that it holds no key or value it replaced; mu is held.
func (s *memStore) keepUndo(tx *memTx) {
	u := tx.undo
	clear(u)
	if cap(u) > maxKeptUndo {
		u = nil
	}
	s.undo = u[:0]
}

func (s *memStore) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
	return nil
}

// closeLocked marks the store closed and drops its data; mu is held.
func (s *memStore) closeLocked() {
	s.closed = true
	for i := range s.buckets {
		s.buckets[i] = btree.NewG(2, memLess)
	}
}

type memTx struct {
	s        *memStore
	writable bool
	undo     []memUndo
}

// memUndo undoes one write: old is what the key held (its key and value
// or reference), when existed.
type memUndo struct {
	b       bucketID
	k       []byte
	old     memItem
	existed bool
}

func (tx *memTx) encoder() *encoder {
	if !tx.writable {
		panic("localworld: an encoder in a read transaction")
	}
	if tx.s.enc == nil {
		e := &encoder{}
		e.enc = json.NewEncoder(&e.buf)
		tx.s.enc = e
	}
	return tx.s.enc
}

// value is the item's value, read from the file when it is on disk.
func (tx *memTx) value(b bucketID, it memItem) ([]byte, error) {
	if !it.onDisk() {
		return it.val(), nil
	}
	v, err := readValue(tx.s.disk, tx.s.diskName, b, it.key(), it.ref())
	if err != nil && errors.Is(err, ErrCorrupt) {
		tx.s.noteDamage(err)
	}
	return v, err
}

// noteDamage keeps err as the store's damage, unless it has one.
func (s *memStore) noteDamage(err error) { s.damage.CompareAndSwap(nil, &err) }

func (tx *memTx) item(b bucketID, k []byte) (memItem, bool) {
	return tx.s.buckets[b].Get(keyItem(k))
}

func (tx *memTx) get(b bucketID, k []byte) ([]byte, error) {
	it, ok := tx.item(b, k)
	if !ok {
		return nil, nil
	}
	return tx.value(b, it)
}

func (tx *memTx) version(b bucketID, k []byte) (*byte, int) {
	if it, ok := tx.item(b, k); ok {
		return it.version(), it.size()
	}
	return nil, 0
}

func (tx *memTx) put(b bucketID, k, v []byte) error {
	_, err := tx.putItem(b, k, v)
	return err
}

// putItem is put, returning the item stored: the copies of k and v the
// store now holds.
func (tx *memTx) putItem(b bucketID, k, v []byte) (memItem, error) {
	if !tx.writable {
		return memItem{}, errors.New("put in a read transaction")
	}
	if err := checkKey(k); err != nil {
		return memItem{}, err
	}
	// Keys are built in buffers with room to spare: keep an exact copy of
	// the key and the value, in one array, as a replayed log does.
	it := ownedItem(k, v)
	old, existed := tx.s.buckets[b].ReplaceOrInsert(it)
	tx.undo = append(tx.undo, memUndo{b: b, k: it.key(), old: old, existed: existed})
	return it, nil
}

// ownedItem copies k and v into one allocation.
func ownedItem(k, v []byte) memItem {
	kv := make([]byte, len(k)+len(v))
	copy(kv, k)
	copy(kv[len(k):], v)
	return makeItem(kv, len(k), false)
}

func (tx *memTx) del(b bucketID, k []byte) error {
	_, err := tx.delItem(b, k)
	return err
}

// delItem is del, returning the item deleted, if any.
func (tx *memTx) delItem(b bucketID, k []byte) (memItem, error) {
	if !tx.writable {
		return memItem{}, errors.New("delete in a read transaction")
	}
	old, existed := tx.s.buckets[b].Delete(keyItem(k))
	if existed {
		tx.undo = append(tx.undo, memUndo{b: b, k: old.key(), old: old, existed: true})
	}
	return old, nil
}

func (tx *memTx) rollback() {
	for i := len(tx.undo) - 1; i >= 0; i-- {
		u := tx.undo[i]
		if u.existed {
			tx.s.buckets[u.b].ReplaceOrInsert(u.old)
		} else {
			tx.s.buckets[u.b].Delete(keyItem(u.k))
		}
	}
	tx.undo = nil
}

func (tx *memTx) scan(b bucketID, lo, hi []byte, desc bool, fn func(k, v []byte) bool) error {
	t := tx.s.buckets[b]
	var err error
	iter := func(it memItem) bool {
		if !it.onDisk() {
			return fn(it.key(), it.val())
		}
		var v []byte
		if v, err = tx.value(b, it); err != nil {
			return false
		}
		return fn(it.key(), v)
	}
	switch {
	case !desc && hi == nil:
		t.AscendGreaterOrEqual(keyItem(lo), iter)
	case !desc:
		t.AscendRange(keyItem(lo), keyItem(hi), iter)
	default:
		below := func(it memItem) bool {
			if bytes.Compare(it.key(), lo) < 0 {
				return false
			}
			return iter(it)
		}
		if hi == nil {
			t.Descend(below)
			return err
		}
		t.DescendLessOrEqual(keyItem(hi), func(it memItem) bool {
			if bytes.Equal(it.key(), hi) {
				return true
			}
			return below(it)
		})
	}
	return err
}
