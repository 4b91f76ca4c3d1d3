package world

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// Page limits.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
)

// Pagination selects a page: up to Limit items after Cursor (a cursor from a
// previous page of the same listing), in ascending order unless Descending.
type Pagination struct {
	Limit      int
	Cursor     string
	Descending bool
}

// EffectiveLimit returns the limit clamped to [1, MaxPageLimit], with
// DefaultPageLimit for zero.
func (p Pagination) EffectiveLimit() int {
	switch {
	case p.Limit <= 0:
		return DefaultPageLimit
	case p.Limit > MaxPageLimit:
		return MaxPageLimit
	}
	return p.Limit
}

// Page is one page of a listing. Cursor is set on every non-empty page, the
// last one included; it is empty only when Items is empty. HasMore reports
// whether more items existed when the page was read.
type Page[T any] struct {
	Items   []T
	Cursor  string
	HasMore bool
}

// cursorJSON is the envelope every World's cursor uses: the listing it
// belongs to and the backend's position.
type cursorJSON struct {
	Kind string          `json:"k"`
	Pos  json.RawMessage `json:"p"`
}

// EncodeCursor makes an opaque cursor for a listing kind ("events:<runId>",
// "runs", ...) from a backend position.
func EncodeCursor(kind string, pos any) string {
	b, err := json.Marshal(pos)
	if err != nil {
		panic(fmt.Sprintf("world: cursor position not encodable: %v", err))
	}
	out, _ := json.Marshal(cursorJSON{Kind: kind, Pos: b})
	return base64.RawURLEncoding.EncodeToString(out)
}

// DecodeCursor reads a cursor made by EncodeCursor for the same kind into pos.
// A malformed cursor, or one from another listing, is an ErrInvalid error.
func DecodeCursor(kind, cursor string, pos any) error {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return fmt.Errorf("%w: malformed cursor", ErrInvalid)
	}
	var c cursorJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("%w: malformed cursor", ErrInvalid)
	}
	if c.Kind != kind {
		return fmt.Errorf("%w: cursor belongs to another listing (%q, not %q)", ErrInvalid, c.Kind, kind)
	}
	if err := json.Unmarshal(c.Pos, pos); err != nil {
		return fmt.Errorf("%w: malformed cursor position", ErrInvalid)
	}
	return nil
}
