package streams

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/skeinflow/skein/world"
)

// An object holds consecutive chunks of one stream: "SKS2", the chunk count
// and each chunk's length as uvarints, the chunks' bytes, then the CRC-32C
// of all that (4 bytes, little-endian). The close marker is an empty
// object, so a listing tells it from data by its size.
const magic = "SKS2"

// oldMagic began the objects of earlier versions, which had no checksum:
// they are refused, since nothing could tell a damaged one.
const oldMagic = "SKS1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeObject(chunks [][]byte) []byte {
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
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// errFormat is a stored object that does not verify or decode.
var errFormat = fmt.Errorf("%w: stream object", world.ErrCorrupt)

// decodeObject returns the chunks of an object, or errFormat when its
// checksum or its layout is wrong.
func decodeObject(b []byte) ([][]byte, error) {
	if len(b) >= len(oldMagic) && string(b[:len(oldMagic)]) == oldMagic {
		return nil, fmt.Errorf("%w: written by an earlier version without a checksum", errFormat)
	}
	if len(b) < len(magic)+crc32.Size || string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a stream object (no %q header)", errFormat, magic)
	}
	b, sum := b[:len(b)-crc32.Size], binary.LittleEndian.Uint32(b[len(b)-crc32.Size:])
	if got := crc32.Checksum(b, castagnoli); got != sum {
		return nil, fmt.Errorf("%w: checksum %08x, the object says %08x (damaged or replaced)", errFormat, got, sum)
	}
	b = b[len(magic):]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: bad chunk count", errFormat)
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
