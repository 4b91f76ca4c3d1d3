package localworld

import (
	"bytes"
	"errors"
	"sync"

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
	// undo is the undo log's array, kept from one write transaction to the
	// next (update serializes them), cleared: a serial step's commit puts
	// about ten values, and growing its undo log from nothing took five
	// allocations (2 KiB) per commit.
	undo []memUndo
}

// maxKeptUndo bounds the undo log's array update keeps for the next
// transaction.
const maxKeptUndo = 256

type memItem struct {
	k, v []byte
}

func memLess(a, b memItem) bool { return bytes.Compare(a.k, b.k) < 0 }

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

type memUndo struct {
	b       bucketID
	k, v    []byte
	existed bool
}

func (tx *memTx) get(b bucketID, k []byte) []byte {
	it, ok := tx.s.buckets[b].Get(memItem{k: k})
	if !ok {
		return nil
	}
	return it.v
}

func (tx *memTx) put(b bucketID, k, v []byte) error {
	_, err := tx.store(b, k, v)
	return err
}

// store is put, returning the copies of k and v the store now holds.
func (tx *memTx) store(b bucketID, k, v []byte) (memItem, error) {
	if !tx.writable {
		return memItem{}, errors.New("put in a read transaction")
	}
	if err := checkKey(k); err != nil {
		return memItem{}, err
	}
	// Keys are built in buffers with room to spare: keep an exact copy of
	// the key and the value, in one allocation, as a replayed log does.
	kv := make([]byte, len(k)+len(v))
	copy(kv, k)
	copy(kv[len(k):], v)
	it := memItem{k: kv[:len(k):len(k)], v: kv[len(k):]}
	old, existed := tx.s.buckets[b].ReplaceOrInsert(it)
	tx.undo = append(tx.undo, memUndo{b: b, k: it.k, v: old.v, existed: existed})
	return it, nil
}

func (tx *memTx) del(b bucketID, k []byte) error {
	if !tx.writable {
		return errors.New("delete in a read transaction")
	}
	old, existed := tx.s.buckets[b].Delete(memItem{k: k})
	if existed {
		tx.undo = append(tx.undo, memUndo{b: b, k: old.k, v: old.v, existed: true})
	}
	return nil
}

func (tx *memTx) rollback() {
	for i := len(tx.undo) - 1; i >= 0; i-- {
		u := tx.undo[i]
		if u.existed {
			tx.s.buckets[u.b].ReplaceOrInsert(memItem{k: u.k, v: u.v})
		} else {
			tx.s.buckets[u.b].Delete(memItem{k: u.k})
		}
	}
	tx.undo = nil
}

func (tx *memTx) scan(b bucketID, lo, hi []byte, desc bool, fn func(k, v []byte) bool) error {
	t := tx.s.buckets[b]
	iter := func(it memItem) bool { return fn(it.k, it.v) }
	switch {
	case !desc && hi == nil:
		t.AscendGreaterOrEqual(memItem{k: lo}, iter)
	case !desc:
		t.AscendRange(memItem{k: lo}, memItem{k: hi}, iter)
	default:
		below := func(it memItem) bool {
			if bytes.Compare(it.k, lo) < 0 {
				return false
			}
			return fn(it.k, it.v)
		}
		if hi == nil {
			t.Descend(below)
			return nil
		}
		t.DescendLessOrEqual(memItem{k: hi}, func(it memItem) bool {
			if bytes.Equal(it.k, hi) {
				return true
			}
			return below(it)
		})
	}
	return nil
}
