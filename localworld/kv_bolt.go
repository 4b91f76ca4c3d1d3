package localworld

import (
	"bytes"
	"errors"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// boltStore is the durable kvStore: one bbolt file, one bbolt bucket per
// bucketID. With group set (SyncBatch), writes go through group commit,
// which combines concurrent transactions into one commit (one fsync).
type boltStore struct {
	db    *bolt.DB
	group *groupCommitter
}

func newBoltStore(db *bolt.DB, group bool) *boltStore {
	s := &boltStore{db: db}
	if group {
		s.group = &groupCommitter{db: db}
	}
	return s
}

func (s *boltStore) view(fn func(kvTx) error) error {
	return mapBoltErr(s.db.View(func(tx *bolt.Tx) error {
		return fn(&boltTx{tx: tx})
	}))
}

func (s *boltStore) update(fn func(kvTx) error) error {
	run := func(tx *bolt.Tx) error { return fn(&boltTx{tx: tx}) }
	if s.group != nil {
		return mapBoltErr(s.group.update(run))
	}
	return mapBoltErr(s.db.Update(run))
}

func (s *boltStore) close() error { return s.db.Close() }

func mapBoltErr(err error) error {
	switch {
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return errStoreClosed
	case errors.Is(err, berrors.ErrKeyTooLarge):
		return errKeyTooLarge
	}
	return err
}

type boltTx struct {
	tx      *bolt.Tx
	buckets [numBuckets]*bolt.Bucket
}

func (t *boltTx) bucket(b bucketID) *bolt.Bucket {
	if bk := t.buckets[b]; bk != nil {
		return bk
	}
	bk := t.tx.Bucket([]byte(bucketNames[b]))
	if bk == nil {
		// Open creates every bucket before the World is used.
		panic("localworld: missing bucket " + bucketNames[b])
	}
	t.buckets[b] = bk
	return bk
}

func (t *boltTx) get(b bucketID, k []byte) []byte { return t.bucket(b).Get(k) }

func (t *boltTx) put(b bucketID, k, v []byte) error {
	if err := checkKey(k); err != nil {
		return err
	}
	if v == nil {
		v = []byte{}
	}
	return t.bucket(b).Put(k, v)
}

func (t *boltTx) del(b bucketID, k []byte) error { return t.bucket(b).Delete(k) }

func (t *boltTx) scan(b bucketID, lo, hi []byte, desc bool, fn func(k, v []byte) bool) error {
	c := t.bucket(b).Cursor()
	if !desc {
		for k, v := c.Seek(lo); k != nil; k, v = c.Next() {
			if hi != nil && bytes.Compare(k, hi) >= 0 {
				return nil
			}
			if !fn(k, v) {
				return nil
			}
		}
		return nil
	}
	var k, v []byte
	if hi == nil {
		k, v = c.Last()
	} else if k, _ = c.Seek(hi); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for ; k != nil; k, v = c.Prev() {
		if bytes.Compare(k, lo) < 0 {
			return nil
		}
		if !fn(k, v) {
			return nil
		}
	}
	return nil
}
