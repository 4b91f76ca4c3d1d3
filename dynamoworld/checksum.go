package dynamoworld

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
)

// Item checksums. Every item the World builds (encItem) carries attrSum, a
// CRC-32C over its key and its stored bytes (the payload attributes, inline
// or claim-check keys, the hold's error, the run head's attrSummed), written
// in the same request as the item. Every decode of an item with stored
// bytes verifies it: a mismatch is world.ErrCorrupt, never data. An item
// without attrSum (written before checksums) still reads, except in a run
// whose head has attrSummed (set at the run's creation): there every item
// read with the head, or with the run's first commit, must carry one, so
// deleting the attribute is no way around the check (attrSummed itself is
// not covered: the head's later writes are diffs of encodings that do not
// know it). A CRC catches damage
// and edits by tools, not an attacker who recomputes it: sealed runs
// (package encrypt) are for that.
const (
	attrSum    = "ck" // 4 bytes: CRC-32C (Castagnoli), big-endian
	attrSummed = "cs" // on the run head, set at creation: the run's items carry attrSum
)

// summedAttr reports whether an attribute's value is covered by attrSum.
func summedAttr(name string) bool {
	return isPayloadAttr(name) || name == aHoldError
}

// itemSum computes an item's checksum: pk, sk, then each covered attribute
// present, in name order, as name, type and length-prefixed value, so that
// a value moved to another item, run or attribute fails too.
func itemSum(it item) uint32 {
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
	field('K', attrPK, getS(it, attrPK))
	field('K', attrSK, getS(it, attrSK))
	for _, name := range sortedKeys(it) {
		if !summedAttr(name) {
			continue
		}
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
	return c
}

// seal sets an item's checksum; it is called on the item as written (its
// payloads claim-checked or not).
func seal(it item) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], itemSum(it))
	it[attrSum] = &types.AttributeValueMemberB{Value: b[:]}
}

// verifyItem checks an item's checksum. An item without one passes unless
// required (its run's items are all written with one).
func verifyItem(it item, required bool) error {
	v, ok := it[attrSum]
	if !ok {
		if required {
			return corruptItem(it, "has no checksum (attribute "+attrSum+"), though its run was written with checksums: the attribute was removed")
		}
		return nil
	}
	b, ok := v.(*types.AttributeValueMemberB)
	if !ok || len(b.Value) != 4 {
		return corruptItem(it, "has a malformed checksum (attribute "+attrSum+")")
	}
	if want, got := binary.BigEndian.Uint32(b.Value), itemSum(it); want != got {
		return corruptItem(it, fmt.Sprintf("does not match its checksum (CRC-32C %08x, stored %08x): a value was damaged or edited", got, want))
	}
	return nil
}

// corruptItem is the world.ErrCorrupt of an item that does not verify; it
// names the item (and so its run).
func corruptItem(it item, what string) error {
	pk := getS(it, attrPK)
	where := ""
	if run, ok := strings.CutPrefix(pk, "r#"); ok {
		where = "run " + run + ": "
	}
	return fmt.Errorf("%w: %sDynamoDB item %s %s", world.ErrCorrupt, where, keyOf(it), what)
}

// runSummed reports whether a run head says its items carry checksums.
func runSummed(head item) bool { return head != nil && getN(head, attrSummed) == 1 }

// requireSums verifies, in a run whose items carry checksums (summed: its
// head says so), the items of its partition among items (nil: absent):
// each must carry one. Items of other runs or global items are verified
// where decoded.
func requireSums(summed bool, runID string, items []item) error {
	if !summed {
		return nil
	}
	for _, it := range items {
		if it != nil && getS(it, attrPK) == runPK(runID) {
			if err := verifyItem(it, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// firstCommitSummed reports whether items hold the run's first commit (the
// one with run_created, keyed 0) carrying a checksum: such a run was
// created by code that writes checksums, so all its items carry one.
func firstCommitSummed(items []item) bool {
	for _, it := range items {
		if getS(it, attrSK) == commitSK(0) {
			_, ok := it[attrSum]
			return ok
		}
	}
	return false
}
