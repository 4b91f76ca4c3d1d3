package streams

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/skeinflow/skein/world"
)

// An object holds consecutive chunks of one stream: "SKS3", the chunk count
// and each chunk's length as uvarints, the chunks' bytes, then the CRC-32C
// (4 bytes, little-endian) of the object's place (see placeOf) followed by
// all that. The place is not stored: a reader computes it from the key it
// asked for, so an object copied or moved to another run, stream or index
// does not verify there. The close marker is such an object with no
// chunks (see sealMarker).
const magic = "SKS3"

// markerSize is the size of the close marker: "SKS3", a chunk count of 0
// and the checksum. An object of chunks is at least 10 bytes (one empty
// chunk), so a listing tells the marker from data by its size alone; it
// verifies the marker with a GET before taking the stream for closed.
const markerSize = len(magic) + 1 + crc32.Size

// oldMagics began the objects of earlier versions, refused since nothing
// could tell a damaged (SKS1: no checksum) or a moved one (SKS2: a
// checksum of the body alone). Neither was in a release.
var oldMagics = [...]string{"SKS1", "SKS2"}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// place is where an object belongs: its run, its stream and the index of
// its first chunk (what its key says).
type place struct {
	runID, name string
	first       int64
}

// seed is the CRC-32C of the place, from which an object's checksum
// continues over its body.
func (p place) seed() uint32 {
	b := make([]byte, 0, len(magic)+len(p.runID)+len(p.name)+3*binary.MaxVarintLen64)
	b = append(b, magic...)
	b = binary.AppendUvarint(b, uint64(len(p.runID)))
	b = append(b, p.runID...)
	b = binary.AppendUvarint(b, uint64(len(p.name)))
	b = append(b, p.name...)
	b = binary.AppendUvarint(b, uint64(p.first))
	return crc32.Checksum(b, castagnoli)
}

// encodeBody returns an object's bytes without the checksum, with room
// for it: seal adds it for a place.
func encodeBody(chunks [][]byte) []byte {
	n := len(magic) + binary.MaxVarintLen64 + crc32.Size
	for _, c := range chunks {
		n += binary.MaxVarintLen64 + len(c)
	}
	b := make([]byte, 0, n)
	b = append(b, magic...)
	b = binary.AppendUvarint(b, uint64(len(chunks)))
	for _, c := range chunks {
		b = binary.AppendUvarint(b, uint64(len(c)))
	}
	for _, c := range chunks {
		b = append(b, c...)
	}
	return b
}

// seal returns body (from encodeBody) with the checksum that binds it to
// at. It reuses body's spare capacity: the result is valid until the next
// seal of body.
func seal(body []byte, at place) []byte {
	return binary.LittleEndian.AppendUint32(body, crc32.Update(at.seed(), castagnoli, body))
}

// sealMarker returns the close marker for a stream whose tail (its chunk
// count) is at.first and whose data bytes are bytes. The checksum covers
// its place and, after the body, the data bytes, which the marker's
// metadata records as every object's does: a marker moved to another
// place, or whose recorded bytes were changed, does not verify.
func sealMarker(at place, bytes int64) []byte {
	body := append([]byte(magic), 0)
	return binary.LittleEndian.AppendUint32(body, markerSum(at, body, bytes))
}

func markerSum(at place, body []byte, bytes int64) uint32 {
	sum := crc32.Update(at.seed(), castagnoli, body)
	return crc32.Update(sum, castagnoli, binary.AppendUvarint(nil, uint64(bytes)))
}

// errEmpty describes an empty object: the close marker of earlier
// versions (an empty object, which nothing could tell from a data object
// truncated to nothing), refused since.
const errEmpty = "an empty object: the close marker of an earlier version (none in a release), which could not be told from a truncated object, or a truncated object"

// checkMarker verifies a close marker read at place at, whose metadata
// records bytes data bytes.
func checkMarker(at place, b []byte, bytes int64) error {
	switch {
	case len(b) == 0:
		return fmt.Errorf("%w: %s", errFormat, errEmpty)
	case len(b) != markerSize || string(b[:len(magic)+1]) != magic+"\x00":
		return fmt.Errorf("%w: not a close marker (%d bytes)", errFormat, len(b))
	}
	body, sum := b[:len(b)-crc32.Size], binary.LittleEndian.Uint32(b[len(b)-crc32.Size:])
	if got := markerSum(at, body, bytes); got != sum {
		return fmt.Errorf("%w: close marker checksum %08x, the marker says %08x (damaged, moved from another run, stream or index, or its recorded bytes changed)", errFormat, got, sum)
	}
	return nil
}

// errFormat is a stored object that does not verify or decode.
var errFormat = fmt.Errorf("%w: stream object", world.ErrCorrupt)

// decodeObject returns the chunks of an object read at place at, or
// errFormat when its checksum (over at and the object) or its layout is
// wrong.
func decodeObject(at place, b []byte) ([][]byte, error) {
	for _, old := range oldMagics {
		if len(b) >= len(old) && string(b[:len(old)]) == old {
			return nil, fmt.Errorf("%w: written by an earlier version (%q) whose checksum did not bind it to its place", errFormat, old)
		}
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: %s", errFormat, errEmpty)
	}
	if len(b) < len(magic)+crc32.Size || string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a stream object (no %q header)", errFormat, magic)
	}
	b, sum := b[:len(b)-crc32.Size], binary.LittleEndian.Uint32(b[len(b)-crc32.Size:])
	if got := crc32.Update(at.seed(), castagnoli, b); got != sum {
		return nil, fmt.Errorf("%w: checksum %08x, the object says %08x (damaged, or copied from another run, stream or index)", errFormat, got, sum)
	}
	b = b[len(magic):]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: bad chunk count", errFormat)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: no chunks (a close marker where an object of chunks was listed)", errFormat)
	}
	b = b[k:]
	lens := make([]uint64, n)
	for i := range lens {
		l, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, fmt.Errorf("%w: bad length of chunk %d", errFormat, i)
		}
		lens[i], b = l, b[k:]
	}
	out := make([][]byte, n)
	for i, l := range lens {
		if l > uint64(len(b)) {
			return nil, fmt.Errorf("%w: chunk %d overruns the object", errFormat, i)
		}
		out[i], b = b[:l:l], b[l:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errFormat, len(b))
	}
	return out, nil
}
