package world

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CheckText reports why s cannot be a workflow or step name, a hook token
// or an idempotency key: it must be valid UTF-8 (the log is JSON, which
// would replace invalid bytes, and the name read back would no longer match
// the code's) and hold no control character (C0, DEL or C1: such names break
// the tables and terminals of the tools that show them). It returns nil for
// acceptable text.
func CheckText(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("is not valid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return fmt.Errorf("contains the control character %U", r)
		}
	}
	return nil
}

// MaxVersionLength bounds a run's code version (RunCreated.Version).
const MaxVersionLength = 128

// CheckVersion reports why v cannot be a run's code version: it is at most
// MaxVersionLength bytes of text that CheckText accepts, with no leading or
// trailing space. The empty version (none recorded) is valid.
func CheckVersion(v string) error {
	if len(v) > MaxVersionLength {
		return fmt.Errorf("version longer than %d bytes", MaxVersionLength)
	}
	if err := CheckText(v); err != nil {
		return fmt.Errorf("version %q %v", v, err)
	}
	if strings.TrimSpace(v) != v {
		return fmt.Errorf("version %q has leading or trailing space", v)
	}
	return nil
}
