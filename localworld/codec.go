package localworld

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
	"github.com/skeinflow/skein/world"
)

// The binary record encoding (layout 2). Events, steps and runs, the
// records a step writes, are stored as a version byte (codecV1) and their
// fields in a fixed order: IDs of the World's form (a prefix and a
// canonical ULID) as the prefix's number and the ULID's 16 bytes, times as
// nanoseconds, strings and JSON payloads with their lengths, nested
// structs that are rarely set (errors, holds, compensation) as their JSON.
// Every other record, and any record the binary form cannot hold exactly
// (a string that is not UTF-8, a time with a zone offset or outside the
// years 0 to 9999, a payload that is not JSON), is JSON as encoding/json
// writes it, which starts with '{': decode tells the two apart by the
// first byte, so layout-1 stores (JSON throughout) read as they are. A
// binary record decodes to exactly what its JSON would (codec_test.go
// checks it field by field against encoding/json); one that does not
// decode whole is ErrCorrupt.
const codecV1 = 0x01

// errNotBinary is what a record that the binary form cannot hold exactly
// encodes to: it is stored as JSON.
var errNotBinary = errors.New("not encodable in the binary form")

// idPrefixes are the ID prefixes an ID's tag names: an ID of tag i > 0 is
// idPrefixes[i-1] and a ULID. Part of the format: append, never reorder.
var idPrefixes = [...]string{world.PrefixRun, world.PrefixStep, world.PrefixHook, world.PrefixWait, world.PrefixEvent, world.PrefixMsg}

// binWriter appends a record's fields to b; err is the first field it
// could not hold exactly.
type binWriter struct {
	b   []byte
	err error
}

func (w *binWriter) uvarint(x uint64) { w.b = binary.AppendUvarint(w.b, x) }
func (w *binWriter) varint(x int64)   { w.b = binary.AppendVarint(w.b, x) }

func (w *binWriter) bool(x bool) {
	if x {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *binWriter) str(s string) {
	if !utf8.ValidString(s) {
		w.err = errNotBinary // encoding/json writes U+FFFD for the bad bytes
	}
	w.uvarint(uint64(len(s)))
	w.b = append(w.b, s...)
}

// id writes an ID: a World ID as its prefix's tag and the ULID's bytes,
// any other string as tag 0 and the string.
func (w *binWriter) id(s string) {
	for i, p := range idPrefixes {
		if len(s) != len(p)+ulid.EncodedSize || s[:len(p)] != p {
			continue
		}
		u, err := ulid.ParseStrict(s[len(p):])
		if err != nil || u.String() != s[len(p):] {
			break
		}
		w.b = append(w.b, byte(i+1))
		w.b = append(w.b, u[:]...)
		return
	}
	w.b = append(w.b, 0)
	w.str(s)
}

// Time tags: the zero time, nanoseconds since 1970, seconds and
// nanoseconds for a time outside int64 nanoseconds, or a time with a zone
// offset: the offset in seconds, then the instant (tag 1 or 2).
const (
	timeZero = iota
	timeNanos
	timeSeconds
	timeZoned
)

// time writes t as encoding/json would keep it: the instant and the zone
// offset (RFC 3339 keeps no zone name, and no seconds of an offset).
func (w *binWriter) time(t time.Time) {
	_, off := t.Zone()
	switch {
	case t.Year() < 0 || t.Year() > 9999 || off%60 != 0 || off <= -24*3600 || off >= 24*3600:
		w.err = errNotBinary // JSON refuses such years and offsets
		return
	case t.IsZero() && off != 0:
		w.err = errNotBinary // JSON keeps it or drops it (omitzero) by field
		return
	case t.IsZero():
		w.b = append(w.b, timeZero)
		return
	case off != 0:
		w.b = append(w.b, timeZoned)
		w.varint(int64(off))
	}
	if t.Year() >= 1678 && t.Year() <= 2261 {
		w.b = append(w.b, timeNanos)
		w.varint(t.UnixNano())
		return
	}
	w.b = append(w.b, timeSeconds)
	w.varint(t.Unix())
	w.uvarint(uint64(t.Nanosecond()))
}

// raw writes a JSON payload as encoding/json writes a json.RawMessage:
// compact, with <, >, & and U+2028, U+2029 escaped.
func (w *binWriter) raw(m json.RawMessage, scratch *bytes.Buffer) {
	if len(m) == 0 {
		w.uvarint(0)
		return
	}
	scratch.Reset()
	if err := json.Compact(scratch, m); err != nil {
		w.err = errNotBinary // JSON refuses it, with its own error
		return
	}
	out := scratch.Bytes()
	if needsHTMLEscape(out) {
		var esc bytes.Buffer
		json.HTMLEscape(&esc, out)
		out = esc.Bytes()
	}
	w.uvarint(uint64(len(out)))
	w.b = append(w.b, out...)
}

func needsHTMLEscape(b []byte) bool {
	return bytes.ContainsAny(b, "<>&") || bytes.Contains(b, []byte("\u2028")) || bytes.Contains(b, []byte("\u2029"))
}

// json writes v as its JSON (nested structs, maps), or nothing (length 0)
// when zero is true.
func (w *binWriter) json(v any, zero bool) {
	if zero {
		w.uvarint(0)
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		w.err = errNotBinary
		return
	}
	w.uvarint(uint64(len(b)))
	w.b = append(w.b, b...)
}

// binReader reads a record's fields; bad is set by the first field that
// does not decode.
type binReader struct {
	b   []byte
	bad string
}

func (r *binReader) fail(what string) {
	if r.bad == "" {
		r.bad = what
	}
	r.b = nil
}

func (r *binReader) uvarint() uint64 {
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("a number")
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *binReader) varint() int64 {
	x, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("a number")
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *binReader) int() int {
	x := r.varint()
	if x < math.MinInt || x > math.MaxInt {
		r.fail("a number")
		return 0
	}
	return int(x)
}

func (r *binReader) byte() byte {
	if len(r.b) == 0 {
		r.fail("a byte")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *binReader) bool() bool {
	switch r.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	r.fail("a flag")
	return false
}

// bytes returns the next length-prefixed field, aliasing the record.
func (r *binReader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("a length")
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *binReader) str() string { return string(r.bytes()) }

func (r *binReader) id() string {
	tag := r.byte()
	switch {
	case tag == 0:
		return r.str()
	case int(tag) <= len(idPrefixes) && len(r.b) >= 16:
		var u ulid.ULID
		copy(u[:], r.b)
		r.b = r.b[16:]
		return idPrefixes[tag-1] + u.String()
	}
	r.fail("an ID")
	return ""
}

func (r *binReader) time() time.Time {
	tag := r.byte()
	if tag == timeZoned {
		off := r.varint()
		if off == 0 || off%60 != 0 || off <= -24*3600 || off >= 24*3600 || len(r.b) == 0 || (r.b[0] != timeNanos && r.b[0] != timeSeconds) {
			r.fail("a time")
			return time.Time{}
		}
		return inZone(r.time(), int(off), time.Local)
	}
	switch tag {
	case timeZero:
		return time.Time{}
	case timeNanos:
		return time.Unix(0, r.varint()).UTC()
	case timeSeconds:
		sec, nsec := r.varint(), r.uvarint()
		if nsec >= 1e9 {
			r.fail("a time")
		}
		return time.Unix(sec, int64(nsec)).UTC()
	}
	r.fail("a time")
	return time.Time{}
}

// inZone is instant t at zone offset off as time.Parse reads it from RFC
// 3339: in local when local has that offset at that instant, else in a
// zone of that offset with no name.
func inZone(t time.Time, off int, local *time.Location) time.Time {
	if _, lo := t.In(local).Zone(); lo == off {
		return t.In(local)
	}
	return t.In(time.FixedZone("", off))
}

// raw reads a JSON payload: a copy (a record's bytes may be the store's),
// nil when empty.
func (r *binReader) raw() json.RawMessage {
	b := r.bytes()
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

// json decodes a field written by binWriter.json into v; false when the
// field is empty (v untouched).
func (r *binReader) json(v any) bool {
	b := r.bytes()
	if len(b) == 0 {
		return false
	}
	if err := json.Unmarshal(b, v); err != nil {
		r.fail("a nested field")
	}
	return true
}

// end checks that the record was read whole.
func (r *binReader) end() error {
	if r.bad == "" && len(r.b) != 0 {
		r.bad = "the end"
	}
	if r.bad != "" {
		return errors.New("a binary record that does not decode at " + r.bad)
	}
	return nil
}
