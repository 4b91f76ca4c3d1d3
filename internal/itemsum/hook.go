package itemsum

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A hook's items (its global item, its run's link and its token's index
// item t#<sha256(token)>) each hold the hook's run, ID and token (run, hid,
// tok: strings, not covered values). HookSum binds the three to the item's
// key: a CRC-32C of the key and the three, set on every item holding a
// token as it is written (hook items are put and deleted, never updated).
// So an index item edited to name another hook, or a hook item edited to
// hold another token, fails its check, and an item copied whole under
// another key too. HookMark on a run head says that the run was created by
// code that writes HookSum: every hook item of its partition must carry it.
const (
	HookSum  = "kh"
	HookMark = "ch"
)

// The attributes HookSum binds.
const (
	hookRun   = "run"
	hookID    = "hid"
	hookToken = "tok"
)

// hookSum is HookSum's value for an item keyed (pk, sk) holding run, hook
// ID and token.
func hookSum(pk, sk, run, hid, tok string) []byte {
	table := crc32.MakeTable(crc32.Castagnoli) // cached by package crc32
	var c uint32
	for i, s := range []string{pk, sk, run, hid, tok} {
		var hdr [5]byte
		hdr[0] = "PSrht"[i]
		binary.BigEndian.PutUint32(hdr[1:], uint32(len(s)))
		c = crc32.Update(c, table, hdr[:])
		c = crc32.Update(c, table, []byte(s))
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], c)
	return b[:]
}

func str(it map[string]types.AttributeValue, name string) (string, bool) {
	v, ok := it[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	return v.Value, true
}

// SealHook sets HookSum on an item that holds a token.
func SealHook(it map[string]types.AttributeValue) {
	tok, ok := str(it, hookToken)
	if !ok {
		return
	}
	pk, sk := keyOf(it)
	run, _ := str(it, hookRun)
	hid, _ := str(it, hookID)
	it[HookSum] = &types.AttributeValueMemberB{Value: hookSum(pk, sk, run, hid, tok)}
}

// VerifyHook checks an item's HookSum: it must match the item's key, run,
// hook ID and token. A token without HookSum is a fault when required (a
// hook item of a run whose head carries HookMark), else it was written by
// code before HookSum; HookSum without a token is a fault (the token was
// removed). Nil when the item holds neither.
func VerifyHook(it map[string]types.AttributeValue, required bool) *Fault {
	tok, hasTok := str(it, hookToken)
	s, hasSum := it[HookSum]
	switch {
	case !hasTok && !hasSum:
		return nil
	case !hasTok:
		return &Fault{hookToken, "is missing, though the item has its hook's checksum (attribute " + HookSum + "): the token was removed"}
	case !hasSum:
		if required {
			return &Fault{hookToken, "has no checksum (attribute " + HookSum + "), though its run was created with hook checksums: the checksum was removed, or the item written by code that predates them"}
		}
		return nil
	}
	b, ok := s.(*types.AttributeValueMemberB)
	if !ok || len(b.Value) != 4 {
		return &Fault{hookToken, "has a malformed hook checksum (attribute " + HookSum + ")"}
	}
	pk, sk := keyOf(it)
	run, _ := str(it, hookRun)
	hid, _ := str(it, hookID)
	if got := hookSum(pk, sk, run, hid, tok); !bytes.Equal(got, b.Value) {
		return &Fault{hookToken, fmt.Sprintf("does not match its hook's checksum (attribute %s: CRC-32C of the key, run %q, hook %q and the token is %x, stored %x): the item names another hook, run or token than it was written with", HookSum, run, hid, got, b.Value)}
	}
	return nil
}
