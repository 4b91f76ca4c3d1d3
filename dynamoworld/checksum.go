package dynamoworld

import (
	"fmt"
	"strings"

	"github.com/skeinflow/skein/internal/itemsum"
	"github.com/skeinflow/skein/world"
)

// Value checksums (package itemsum has the format). Every stored byte value
// of an item (a payload attribute, inline or its claim-check key, a held
// run's error) has a sibling checksum attribute, a CRC-32C bound to the
// item's key, the attribute's name and the value, and every item the World
// builds carries the mark cs. seal sets both on an item as written (apply);
// a diff of two sealed encodings sets or removes a value and its checksum
// together, so the pair stays true whatever other attributes other writers
// change meanwhile. Every read verifies the values it returns: a mismatch
// is world.ErrCorrupt naming the table, run, item and attribute, never
// data. A value without its checksum is accepted only on an item without
// the mark (written by code before checksums), and not in a run whose head
// has the mark (created with checksums) where the read sees the head
// (requireSums): deleting a checksum is no way around the check. A CRC
// catches damage and edits by tools, not an attacker who recomputes it:
// sealed runs (package encrypt) are for that.

// seal sets the checksums of an item's covered values and its mark, and
// a hook item's binding of its run, hook ID and token to its key
// (itemsum.HookSum).
func seal(it item) {
	itemsum.Seal(it)
	itemsum.SealHook(it)
}

// verifyValue checks one covered value of an item before it is used.
func verifyValue(it item, name string) error {
	if f := itemsum.VerifyAttr(it, name, false); f != nil {
		return corruptValue("", it, f)
	}
	return nil
}

// corruptValue is the world.ErrCorrupt of a value that does not verify.
func corruptValue(table string, it item, f *itemsum.Fault) error {
	var b strings.Builder
	if table != "" {
		fmt.Fprintf(&b, "DynamoDB table %s: ", table)
	}
	if run, ok := strings.CutPrefix(getS(it, attrPK), "r#"); ok {
		fmt.Fprintf(&b, "run %s: ", run)
	}
	fmt.Fprintf(&b, "item %s, attribute %s (%s) %s", keyOf(it), f.Attr, payloadName(f.Attr), f.What)
	return fmt.Errorf("%w: %s", world.ErrCorrupt, b.String())
}

// verified checks every item a read returned (nil items skipped).
func (w *store) verified(items ...item) error {
	for _, it := range items {
		if it == nil {
			continue
		}
		if f := itemsum.Verify(it); f != nil {
			return corruptValue(w.cfg.Table, it, f)
		}
		if f := itemsum.VerifyHook(it, false); f != nil {
			return corruptValue(w.cfg.Table, it, f)
		}
		if f := missingWriteMark(it); f != nil {
			return corruptValue(w.cfg.Table, it, f)
		}
		if f := missingHeadFlag(it); f != nil {
			return corruptValue(w.cfg.Table, it, f)
		}
	}
	return nil
}

// missingWriteMark is the fault of a run's step, wait or hook-link item
// written with its write mark under the checksum (aWrittenAt, gaps.go)
// that has none: removed, with its checksum or not.
func missingWriteMark(it item) *itemsum.Fault {
	if pk := getS(it, attrPK); !strings.HasPrefix(pk, "r#") || !isEntity(pk[2:], itemKey{pk, getS(it, attrSK)}) {
		return nil
	}
	return itemsum.MissingWriteMark(it)
}

// missingHeadFlag is the fault of a run head written with its format flag
// b covered (bare.go: a run created by the format of bare steps) that has
// none: an update never removes it, so it was removed, and without it the
// run's bare steps would read as absent.
func missingHeadFlag(it item) *itemsum.Fault {
	if !strings.HasPrefix(getS(it, attrPK), "r#") || getS(it, attrSK) != skRunHead {
		return nil
	}
	return itemsum.MissingHeadFlag(it)
}

// runSummed reports whether a run head says its run was created with
// checksums: every item of the run carries them.
func runSummed(head item) bool { return head != nil && itemsum.Marked(head) }

// requireSums checks, in a run created with checksums (summed: its head
// says so), the items of its partition among items (nil: absent): each
// covered value must carry its checksum, whether or not the item still
// carries the mark (verified checks the checksums). Items of other runs
// and global items are judged on their own mark.
func (w *store) requireSums(summed bool, runID string, items ...item) error {
	if !summed {
		return nil
	}
	for _, it := range items {
		if it == nil || getS(it, attrPK) != runPK(runID) {
			continue
		}
		if f := itemsum.Unsummed(it); f != nil {
			return corruptValue(w.cfg.Table, it, f)
		}
	}
	return nil
}

// requireWriteMarks checks, in a run whose head carries the mark at level
// 2 (itemsum.WriteMarked: created with its write marks covered), that each
// of its step, wait and hook-link items among items (nil: absent) carries
// that level and its write mark under its checksum: an edit of cs (removed,
// or any other value) is no way around the check of wq.
func (w *store) requireWriteMarks(head item, runID string, items ...item) error {
	if head == nil || !itemsum.WriteMarked(head) {
		return nil
	}
	for _, it := range items {
		if it == nil || !isEntity(runID, itemKey{getS(it, attrPK), getS(it, attrSK)}) {
			continue
		}
		if f := itemsum.WriteUnmarked(it); f != nil {
			return corruptValue(w.cfg.Table, it, f)
		}
	}
	return nil
}

// runHooksSummed reports whether a run head says its run was created with
// hook checksums (itemsum.HookMark): every hook item of the run carries
// itemsum.HookSum.
func runHooksSummed(head item) bool { return head != nil && getN(head, itemsum.HookMark) == 1 }

// requireHookSums checks, in a run created with hook checksums (summed:
// its head says so), that each hook item of its partition among items
// (nil: absent) carries its checksum (verified checks it): deleting it is
// no way around the check.
func (w *store) requireHookSums(summed bool, runID string, items ...item) error {
	if !summed {
		return nil
	}
	for _, it := range items {
		if it == nil || getS(it, attrPK) != runPK(runID) {
			continue
		}
		if f := itemsum.VerifyHook(it, true); f != nil {
			return corruptValue(w.cfg.Table, it, f)
		}
	}
	return nil
}

// firstCommitSummed reports whether items hold the run's first commit (the
// one with run_created, keyed 0) carrying the mark: such a run was created
// by code that writes checksums, so all its items carry them.
func firstCommitSummed(items []item) bool {
	for _, it := range items {
		if getS(it, attrSK) == commitSK(0) {
			return itemsum.Marked(it)
		}
	}
	return false
}
