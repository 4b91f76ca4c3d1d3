package streams

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// An object holds consecutive chunks of one stream: "SKS1", the chunk count
// and each chunk's length as uvarints, then the chunks' bytes. The close
// marker is an empty object, so a listing tells it from data by its size.
const magic = "SKS1"

func encodeObject(chunks [][]byte) []byte {
	n := len(magic) + binary.MaxVarintLen64
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

var errFormat = errors.New("streams: malformed stream object")

func decodeObject(b []byte) ([][]byte, error) {
	if len(b) < len(magic) || string(b[:len(magic)]) != magic {
		return nil, errFormat
	}
	b = b[len(magic):]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errFormat
	}
	b = b[k:]
	lens := make([]uint64, n)
	for i := range lens {
		l, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errFormat
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
