package sdk

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/world"
)

// Run attributes are small key/value labels on a run, for finding it
// again: Client.ListRuns filters by one (ListRunsOptions.Attribute), and
// RunInfo.Attributes holds them all. They are set when the run starts
// (WithAttributes), by its workflow code (SetAttributes) or by a client
// (Client.SetAttributes), each time merged into the run's: the keys named
// take the new values, the others stay. A key is 1 to 64 characters of
// A-Z a-z 0-9 _ . : -, a value 1 to 256 bytes of text without control
// characters, and a run holds at most 16 keys (world.MaxAttributes and
// its neighbours). Keys starting with ReservedPrefix ("skein.") are the
// SDK's own, such as a scheduled run's AttrSchedule and AttrScheduledTime:
// callers setting one are refused with an error matching world.ErrInvalid,
// and a rerun (skein runs rerun, the dashboard) does not copy them. Attributes are stored and indexed as given (payload
// encryption, package encrypt, leaves them readable: a World lists runs by
// them), so keep secrets out of them.

// SetAttributes merges attrs into the run's attributes. It is deterministic
// and returns at once: the attributes are recorded (an attribute_set event)
// at the workflow's next suspension, or with the run's end when the
// workflow returns first, and replay matches them by their keys (code that
// sets other keys at the same point of a run in flight diverges, like a
// step called by another name). A key or value out of bounds, or a run
// that would hold more than 16 keys, is refused here and nothing is
// recorded: the error matches world.ErrInvalid (a *world.RefusalError
// naming the key), and the run goes on as the code decides: returning the
// error fails the run. An empty value is out of bounds, so leave out the key
// of an optional value that may be empty rather than set it to "".
func SetAttributes(ctx Context, attrs map[string]string) error {
	if err := checkCallerAttributes(world.EventAttributeSet, "", attrs); err != nil {
		return err
	}
	return ctx.impl().ec.SetAttributes(attrs)
}

// SetAttributes merges attrs into the run's attributes, in any status (a
// finished run included): an attribute_set event without a correlation
// ID. A run that does not exist is an error matching world.ErrNotFound;
// attributes out of bounds (see SetAttributes), one matching
// world.ErrInvalid, and the run is left as it was.
func (c *Client) SetAttributes(ctx context.Context, runID string, attrs map[string]string) error {
	if err := world.ValidateID(world.PrefixRun, runID); err != nil {
		return fmt.Errorf("workflow: set attributes: %q is not a run ID: %w", runID, world.ErrInvalid)
	}
	if err := checkCallerAttributes(world.EventAttributeSet, runID, attrs); err != nil {
		return fmt.Errorf("workflow: set attributes of run %s: %w", runID, err)
	}
	res, err := c.w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{{Data: &world.AttributeSet{Attributes: attrs}}}})
	if err != nil {
		return fmt.Errorf("workflow: set attributes of run %s: %w", runID, err)
	}
	engine.ObserveCommit(ctx, c.log, nil, res)
	return nil
}

// checkCallerAttributes refuses attribute keys a caller may not set: those
// starting with ReservedPrefix, which only the SDK sets (a schedule's
// firing records AttrSchedule and AttrScheduledTime, and a run that
// carries them claims to be that firing's).
func checkCallerAttributes(t world.EventType, runID string, attrs map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		if strings.HasPrefix(k, ReservedPrefix) {
			return &world.RefusalError{Kind: world.ErrInvalid, EventType: t, Entity: runID,
				Reason: fmt.Sprintf("attribute %q is reserved: keys starting with %q are the SDK's own (such as %s)", k, ReservedPrefix, AttrSchedule)}
		}
	}
	return nil
}
