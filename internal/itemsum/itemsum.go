// Package itemsum is the per-value checksum of the DynamoDB World's items,
// shared by package dynamoworld, which writes and verifies it, and by
// dynamotest.Reseal, which recomputes it as someone who edits an item with
// a tool and recomputes the CRC would.
//
// Each covered attribute X (a stored byte value: a payload inline or its
// claim-check key, a held run's error) has a sibling attribute "k"+X, a
// CRC-32C (Castagnoli, 4 bytes big-endian) of the item's key (pk, sk), X's
// name and X's value with its type. A write that sets X sets its sibling in
// the same request, and one that removes X removes it: the pair is changed
// atomically whatever else the item's other writers change, and nothing
// computes a checksum over attributes it did not write. Mark ("cs") is on
// every item written with checksums: a covered value without its checksum
// on a marked item was not written so. Its value says which attributes
// were covered when the item was written: 1, the stored byte values; 2,
// also the write mark "wq" (MarkWrite), which every item with it that
// needs one (a run's step, wait and hook-link items) carries; 3, also a
// run head's format flag "b" (HeadFlag), which every head of a run created
// by that format carries from its creation on.
package itemsum

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Mark is the attribute (number 1 or 2) on every item written with
// checksums. On a run head it also records that the run was created with
// them, so that every item of the run must carry them.
const Mark = "cs"

// Mark levels: an item written with checksums on its byte values (1), on
// its write mark too (2), and on a head's format flag too (3): Seal writes
// 3.
const (
	levelValues = "1"
	levelWrite  = "2"
	levelHead   = "3"
)

// HeadFlag is a run head's format flag (the run may have bare steps),
// which an update never adds or removes: covered since mark level 3, and
// then required on a head (MissingHeadFlag).
const HeadFlag = "b"

// MarkWrite is the write mark of a run's step, wait and hook-link items
// (the last sequence number of the commit that wrote the item), covered
// since mark level 2: an item of level 1 may carry it without a checksum.
const MarkWrite = "wq"

// sumPrefix prefixes a covered attribute's name to name its checksum.
const sumPrefix = "k"

// Covered reports whether an attribute's value carries a checksum: the
// payload attributes (in, out, err, cerr, ctx, attrs, md, d), a held
// run's error (he), the write mark (wq, MarkWrite) and a head's format
// flag (b, HeadFlag). To cover another attribute, add its name here:
// writers and readers follow.
func Covered(name string) bool {
	switch name {
	case "in", "out", "err", "cerr", "ctx", "attrs", "md", "d", "he", MarkWrite, HeadFlag:
		return true
	}
	return false
}

// Attr is the name of the attribute holding name's checksum.
func Attr(name string) string { return sumPrefix + name }

// coveredOf returns the covered attribute whose checksum attr is, if it is
// one.
func coveredOf(attr string) (string, bool) {
	name, ok := strings.CutPrefix(attr, sumPrefix)
	return name, ok && Covered(name)
}

// Sum is the checksum of value v of attribute name on the item keyed
// (pk, sk): 4 bytes.
func Sum(pk, sk, name string, v types.AttributeValue) []byte {
	table := crc32.MakeTable(crc32.Castagnoli) // cached by package crc32
	var c uint32
	field := func(tag byte, s []byte) {
		var hdr [5]byte
		hdr[0] = tag
		binary.BigEndian.PutUint32(hdr[1:], uint32(len(s)))
		c = crc32.Update(c, table, hdr[:])
		c = crc32.Update(c, table, s)
	}
	field('P', []byte(pk))
	field('S', []byte(sk))
	field('A', []byte(name))
	switch v := v.(type) {
	case *types.AttributeValueMemberB:
		field('b', v.Value)
	case *types.AttributeValueMemberS:
		field('s', []byte(v.Value))
	case *types.AttributeValueMemberN:
		field('n', []byte(v.Value))
	default:
		field('?', nil) // a type the World never writes in a covered attribute
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], c)
	return b[:]
}

// Seal sets the checksum of every covered value of an item as it is
// written (its payloads claim-checked or not), and the mark.
func Seal(it map[string]types.AttributeValue) {
	pk, sk := keyOf(it)
	var names []string
	for name := range it {
		if Covered(name) {
			names = append(names, name)
		}
	}
	for _, name := range names {
		it[Attr(name)] = &types.AttributeValueMemberB{Value: Sum(pk, sk, name, it[name])}
	}
	it[Mark] = &types.AttributeValueMemberN{Value: levelHead}
}

// level is the item's mark level, "" when it has none.
func level(it map[string]types.AttributeValue) string {
	if n, ok := it[Mark].(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return ""
}

// Marked reports whether an item carries the mark.
func Marked(it map[string]types.AttributeValue) bool {
	l := level(it)
	return l == levelValues || l == levelWrite || l == levelHead
}

// WriteMarked reports whether an item carries the mark at level 2 or more:
// its write mark, if it needs one, is covered (and present:
// MissingWriteMark).
func WriteMarked(it map[string]types.AttributeValue) bool {
	l := level(it)
	return l == levelWrite || l == levelHead
}

// headMarked reports whether an item carries the mark at level 3: a run
// head's format flag is covered.
func headMarked(it map[string]types.AttributeValue) bool { return level(it) == levelHead }

// MissingHeadFlag returns the fault of a run head written with its format
// flag covered (level 3) that has none: Seal of a head of a run created by
// that format covers its flag, and an update never removes it, so it was
// removed, with its checksum or not. The caller tells run heads from other
// items. Nil otherwise.
func MissingHeadFlag(it map[string]types.AttributeValue) *Fault {
	if _, ok := it[HeadFlag]; ok || !headMarked(it) {
		return nil
	}
	return &Fault{HeadFlag, "is missing, though the run head was written with it (mark " + Mark + " = " + levelHead + "): it was removed"}
}

// MissingWriteMark returns the fault of an item that needs a write mark
// (a run's step, wait or hook-link item) and has none though it was
// written with it (WriteMarked): it was removed with its checksum. Nil
// otherwise.
func MissingWriteMark(it map[string]types.AttributeValue) *Fault {
	if _, ok := it[MarkWrite]; ok || !WriteMarked(it) {
		return nil
	}
	return &Fault{MarkWrite, "is missing, though the item was written with it (mark " + Mark + " = " + levelWrite + "): it was removed"}
}

// WriteUnmarked returns, in a run whose head carries the mark at level 2
// (its items were all written with the write mark covered), the fault of
// an item that needs a write mark (a run's step, wait or hook-link item)
// and is not marked at level 2 or has no write mark under its checksum:
// the mark was removed or lowered to skip the check. Nil otherwise.
func WriteUnmarked(it map[string]types.AttributeValue) *Fault {
	if !WriteMarked(it) {
		return &Fault{MarkWrite, "is not covered: the item's mark " + Mark + " is below " + levelWrite + ", though its run's head's is not: the mark was edited"}
	}
	if f := MissingWriteMark(it); f != nil {
		return f
	}
	return VerifyAttr(it, MarkWrite, true)
}

// requiredSum reports whether a covered value of an item must carry its
// checksum: any of them on a marked item, but the write mark only on an
// item written when it was covered (level 2).
func requiredSum(it map[string]types.AttributeValue, name string) bool {
	switch name {
	case MarkWrite:
		return WriteMarked(it)
	case HeadFlag:
		return headMarked(it)
	}
	return Marked(it)
}

// Unsummed returns, in a run whose items all carry checksums, the first
// covered value of an item (in name order) that has none: a fault whether
// or not the item carries the mark. Nil when every value has one; the
// checksums themselves are checked by Verify.
func Unsummed(it map[string]types.AttributeValue) *Fault {
	var missing []string
	for name := range it {
		// Any covered value, whatever the item's own mark says, but the
		// write mark and the head flag only where their level covers them.
		if _, ok := it[Attr(name)]; Covered(name) && !ok && (name != MarkWrite || WriteMarked(it)) && (name != HeadFlag || headMarked(it)) {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return &Fault{missing[0], "has no checksum (attribute " + Attr(missing[0]) + "), though its run was created with checksums: the checksum was removed, or the value written by code that predates them"}
}

// Fault is what is wrong with one covered attribute of an item.
type Fault struct {
	Attr string // the covered attribute
	What string
}

// Verify checks every covered value of an item and every checksum it
// holds, in name order: a value must match its checksum; a checksum
// without its value means the value was removed; a value without its
// checksum is a fault when the item carries the mark, else it was written
// by code before checksums (Unsummed judges those in a run that has
// them). It returns the first fault, nil when there is none.
func Verify(it map[string]types.AttributeValue) *Fault {
	names := map[string]bool{}
	for attr := range it {
		if Covered(attr) {
			names[attr] = true
		} else if name, ok := coveredOf(attr); ok {
			names[name] = true
		}
	}
	if len(names) == 0 {
		return nil
	}
	sorted := make([]string, 0, len(names))
	for name := range names {
		sorted = append(sorted, name)
	}
	slices.Sort(sorted)
	for _, name := range sorted {
		if f := VerifyAttr(it, name, false); f != nil {
			return f
		}
	}
	return nil
}

// VerifyAttr checks one covered attribute of an item (see Verify); a
// value without its checksum is a fault when required or when the item
// carries the mark (for the write mark, at level 2).
func VerifyAttr(it map[string]types.AttributeValue, name string, required bool) *Fault {
	v, has := it[name]
	s, hasSum := it[Attr(name)]
	switch {
	case !has && !hasSum:
		return nil
	case !has:
		return &Fault{name, "has a checksum (attribute " + Attr(name) + ") but no value: the value was removed"}
	case !hasSum:
		if required || requiredSum(it, name) {
			return &Fault{name, "has no checksum (attribute " + Attr(name) + "), though the item or its run was written with checksums: the checksum was removed, or the value written by code that predates them"}
		}
		return nil
	}
	b, ok := s.(*types.AttributeValueMemberB)
	if !ok || len(b.Value) != 4 {
		return &Fault{name, "has a malformed checksum (attribute " + Attr(name) + ")"}
	}
	pk, sk := keyOf(it)
	if got := Sum(pk, sk, name, v); !bytes.Equal(got, b.Value) {
		return &Fault{name, fmt.Sprintf("does not match its checksum (CRC-32C %x, stored %x): the value was damaged or edited", got, b.Value)}
	}
	return nil
}

func keyOf(it map[string]types.AttributeValue) (pk, sk string) {
	if v, ok := it["pk"].(*types.AttributeValueMemberS); ok {
		pk = v.Value
	}
	if v, ok := it["sk"].(*types.AttributeValueMemberS); ok {
		sk = v.Value
	}
	return pk, sk
}
