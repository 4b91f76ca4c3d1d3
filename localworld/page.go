package localworld

import (
	"bytes"

	"github.com/skeinflow/skein/world"
)

// listing is one paged scan of an index: the keys of bucket under prefix, in
// key order or reverse. A cursor is the key suffix (after prefix) of the last
// item returned, wrapped by world.EncodeCursor with kind, which names the
// listing and the run or filter it belongs to. A chunked listing (the
// correlation index, corr.go) pages over the events its entries hold,
// each named by the key suffix it would have on its own.
type listing struct {
	kind    string
	bucket  bucketID
	prefix  []byte
	desc    bool
	page    world.Pagination
	chunked bool
}

// scanPage reads one page of l. load turns an index entry (its key suffix and
// value) into an item; ok false skips the entry.
func scanPage[T any](tx kvTx, l listing, load func(suffix, v []byte) (item T, ok bool, err error)) (*world.Page[T], error) {
	lo, hi := l.prefix, prefixEnd(l.prefix)
	var from []byte // a chunked listing's cursor: the suffix its items follow
	if l.page.Cursor != "" {
		var pos []byte
		if err := world.DecodeCursor(l.kind, l.page.Cursor, &pos); err != nil {
			return nil, err
		}
		k := append(bytes.Clone(l.prefix), pos...)
		switch {
		case l.desc:
			hi = k
		case l.chunked:
			var err error
			if lo, err = chunkStart(tx, l, k); err != nil {
				return nil, err
			}
		default:
			lo = after(k)
		}
		from = pos
	}
	limit := l.page.EffectiveLimit()
	out := &world.Page[T]{Items: []T{}}
	var last, prev []byte // prev: a chunked listing's last event seen
	var loadErr error
	overlap := false
	// take adds the item of one entry; false ends the scan.
	take := func(suffix, v []byte) bool {
		item, ok, err := load(suffix, v)
		if err != nil {
			loadErr = err
			return false
		}
		if !ok {
			return true
		}
		// A full page has more only if an entry past it is not skipped:
		// a filtered listing must not promise a page that comes empty.
		if len(out.Items) == limit {
			out.HasMore = true
			return false
		}
		out.Items = append(out.Items, item)
		last = append(last[:0], suffix...)
		return true
	}
	err := tx.scan(l.bucket, lo, hi, l.desc, func(k, v []byte) bool {
		suffix := k[len(l.prefix):]
		if !l.chunked {
			return take(suffix, v)
		}
		more, err := expandChunk(suffix, v, l.desc, func(vs []byte) bool {
			if c := bytes.Compare(vs, from); from != nil && (c == 0 || (c < 0) != l.desc) {
				return true // the cursor's, or before it (after it, descending)
			}
			if c := bytes.Compare(vs, prev); prev != nil && (c == 0 || (c < 0) != l.desc) {
				overlap = true // entries holding the same events: not what was written
				return false
			}
			prev = append(prev[:0], vs...)
			return take(vs, nil)
		})
		if err == nil && overlap {
			err = errBadChunk
		}
		if err != nil {
			loadErr = corruptRead(l.bucket, k, "%v", err)
		}
		return more && err == nil
	})
	if err == nil {
		err = loadErr
	}
	if err != nil {
		return nil, err
	}
	if len(out.Items) > 0 {
		out.Cursor = world.EncodeCursor(l.kind, last)
	}
	return out, nil
}

// chunkStart is where an ascending scan of chunked listing l resumes after
// the item whose key would be k: at the entry holding it, the last at or
// before k.
func chunkStart(tx kvTx, l listing, k []byte) ([]byte, error) {
	start := after(k)
	err := tx.scan(l.bucket, l.prefix, after(k), true, func(ek, _ []byte) bool {
		start = bytes.Clone(ek)
		return false
	})
	return start, err
}
