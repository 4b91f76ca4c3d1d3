package world

import (
	"fmt"
	"maps"
	"slices"
)

// Run attributes are small key/value labels on a run: set when it is
// created (RunCreated.Attributes) or later (attribute_set, by the run's
// workflow code or by a client), merged into Run.Attributes, and listed by
// (ListRunsParams.Attribute). A key once set keeps a value: an
// attribute_set overwrites the keys it names and leaves the others.

// EventAttributeSet merges attributes into a run (AttributeSet).
const EventAttributeSet EventType = "attribute_set"

// Attribute bounds. A key is 1 to MaxAttributeKeyLength characters of
// [A-Za-z0-9_.:-]; a value is 1 to MaxAttributeValueLength bytes of text
// (CheckText); a run has at most MaxAttributes of them.
const (
	MaxAttributeKeyLength   = 64
	MaxAttributeValueLength = 256
	MaxAttributes           = 16
)

// PrefixAttribute prefixes the correlation ID of an attribute_set that
// workflow code recorded (one ID per call, drawn like a step's). A client's
// attribute_set has none.
const PrefixAttribute = "attr_"

// AttributeSet merges Attributes into the run's attributes: the keys it
// names take its values, the others keep theirs. It is allowed in any run
// status (attributes are metadata, which a client may add after the run
// has ended). Patches are the patch markers of workflow code (see
// patch.go), on an attribute_set the code recorded.
type AttributeSet struct {
	Attributes map[string]string `json:"attributes"`
	Patches    []string          `json:"patches,omitempty"`
}

// EventType returns EventAttributeSet.
func (*AttributeSet) eventType() EventType { return EventAttributeSet }

func (d *AttributeSet) validate(corr string) error {
	if corr != "" {
		if err := ValidateID(PrefixAttribute, corr); err != nil {
			return invalidf(EventAttributeSet, corr, "%v", err)
		}
	}
	if len(d.Attributes) == 0 {
		return invalidf(EventAttributeSet, corr, "attributes required")
	}
	if err := validAttributes(EventAttributeSet, corr, d.Attributes); err != nil {
		return err
	}
	return validPatches(EventAttributeSet, corr, d.Patches)
}

// checkAttributeKey reports why key cannot be an attribute key, nil when it
// can.
func checkAttributeKey(key string) error {
	if key == "" {
		return fmt.Errorf("attribute key is empty")
	}
	if len(key) > MaxAttributeKeyLength {
		return fmt.Errorf("attribute key %.16q... is longer than %d characters", key, MaxAttributeKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; !attrKeyByte(c) {
			return fmt.Errorf("attribute key %q has the character %q (allowed: A-Z a-z 0-9 _ . : -)", key, rune(c))
		}
	}
	return nil
}

func attrKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == ':' || c == '-'
}

// checkAttributeValue reports why v cannot be the value of the attribute
// key, nil when it can.
func checkAttributeValue(key, v string) error {
	if v == "" {
		return fmt.Errorf("attribute %q has an empty value", key)
	}
	if len(v) > MaxAttributeValueLength {
		return fmt.Errorf("attribute %q has a value of %d bytes (at most %d)", key, len(v), MaxAttributeValueLength)
	}
	if err := CheckText(v); err != nil {
		return fmt.Errorf("attribute %q value %v", key, err)
	}
	return nil
}

// CheckAttributes reports why attrs cannot be set on a run: the first
// invalid key or value (in key order), or more than MaxAttributes of them.
// It checks attrs alone; merged into a run's, the count may still exceed
// the bound (mergeAttributes).
func CheckAttributes(attrs map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		if err := checkAttributeKey(k); err != nil {
			return err
		}
		if err := checkAttributeValue(k, attrs[k]); err != nil {
			return err
		}
	}
	if len(attrs) > MaxAttributes {
		return fmt.Errorf("%d attributes, at most %d on a run", len(attrs), MaxAttributes)
	}
	return nil
}

func validAttributes(t EventType, corr string, attrs map[string]string) error {
	if err := CheckAttributes(attrs); err != nil {
		return invalidf(t, corr, "%v", err)
	}
	return nil
}

// mergeAttributes returns a copy of have with set merged in, or an error
// when the result would hold more than MaxAttributes keys (naming the first
// new key that does not fit). Neither map is modified.
func mergeAttributes(have, set map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(have)+len(set))
	maps.Copy(out, have)
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if _, ok := out[k]; !ok && len(out) == MaxAttributes {
			return nil, fmt.Errorf("attribute %q would be attribute %d of the run, at most %d", k, len(out)+1, MaxAttributes)
		}
		out[k] = set[k]
	}
	return out, nil
}

// applyAttributeSet merges the event's attributes into the run's.
func applyAttributeSet(eff *Effect, d *AttributeSet) error {
	merged, err := mergeAttributes(eff.Run.Attributes, d.Attributes)
	if err != nil {
		return invalidf(EventAttributeSet, eff.Run.RunID, "%v", err)
	}
	eff.Run.Attributes = merged
	return nil
}

// AttributeFilter selects the runs whose attribute Key has Value
// (ListRunsParams.Attribute).
type AttributeFilter struct {
	Key   string
	Value string
}

// Check reports why f cannot filter runs: an invalid key or value.
func (f *AttributeFilter) Check() error {
	if err := checkAttributeKey(f.Key); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := checkAttributeValue(f.Key, f.Value); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// Matches reports whether r has the attribute; a nil filter matches every
// run.
func (f *AttributeFilter) Matches(r *Run) bool {
	if f == nil {
		return true
	}
	v, ok := r.Attributes[f.Key]
	return ok && v == f.Value
}
