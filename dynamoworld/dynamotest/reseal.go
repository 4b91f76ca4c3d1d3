package dynamotest

import (
	"encoding/binary"
	"hash/crc32"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Reseal recomputes the checksum ("ck") of an item of the World's table as
// the World computes it (a CRC-32C over pk, sk and the stored bytes), as
// someone who edits an item and recomputes the CRC would: tests use it to
// reach the layer behind the checksum (package encrypt's sealed runs).
// dynamoworld's tests check that it agrees with the World.
func Reseal(it map[string]types.AttributeValue) {
	tab := crc32.MakeTable(crc32.Castagnoli)
	var c uint32
	field := func(tag byte, name, v string) {
		var hdr [5]byte
		hdr[0] = tag
		binary.BigEndian.PutUint32(hdr[1:], uint32(len(name)))
		c = crc32.Update(c, tab, hdr[:])
		c = crc32.Update(c, tab, []byte(name))
		binary.BigEndian.PutUint32(hdr[1:], uint32(len(v)))
		c = crc32.Update(c, tab, hdr[1:])
		c = crc32.Update(c, tab, []byte(v))
	}
	s := func(name string) string {
		v, _ := it[name].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	field('K', "pk", s("pk"))
	field('K', "sk", s("sk"))
	var names []string
	for name := range it {
		switch name {
		case "in", "out", "err", "cerr", "ctx", "attrs", "md", "d", "he":
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		switch v := it[name].(type) {
		case *types.AttributeValueMemberB:
			field('B', name, string(v.Value))
		case *types.AttributeValueMemberS:
			field('S', name, v.Value)
		case *types.AttributeValueMemberN:
			field('N', name, v.Value)
		default:
			field('?', name, "")
		}
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], c)
	it["ck"] = &types.AttributeValueMemberB{Value: b[:]}
}
