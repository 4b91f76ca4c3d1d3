package localworld

import (
	"bytes"

	"github.com/skeinflow/skein/world"
)

// listing is one paged scan of an index: the keys of bucket under prefix, in
// key order or reverse. A cursor is the key suffix (after prefix) of the last
// item returned, wrapped by world.EncodeCursor with kind, which names the
// listing and the run or filter it belongs to.
type listing struct {
	kind   string
	bucket bucketID
	prefix []byte
	desc   bool
	page   world.Pagination
}

// scanPage reads one page of l. load turns an index entry (its key suffix and
// value) into an item; ok false skips the entry.
func scanPage[T any](tx kvTx, l listing, load func(suffix, v []byte) (item T, ok bool, err error)) (*world.Page[T], error) {
	lo, hi := l.prefix, prefixEnd(l.prefix)
	if l.page.Cursor != "" {
		var pos []byte
		if err := world.DecodeCursor(l.kind, l.page.Cursor, &pos); err != nil {
			return nil, err
		}
		k := append(bytes.Clone(l.prefix), pos...)
		if l.desc {
			hi = k
		} else {
			lo = after(k)
		}
	}
	limit := l.page.EffectiveLimit()
	out := &world.Page[T]{Items: []T{}}
	var last []byte
	var loadErr error
	err := tx.scan(l.bucket, lo, hi, l.desc, func(k, v []byte) bool {
		suffix := k[len(l.prefix):]
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
