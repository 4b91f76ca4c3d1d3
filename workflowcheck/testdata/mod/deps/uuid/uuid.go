// Package uuid is a stub of github.com/google/uuid for the fixtures.
package uuid

// UUID is a UUID.
type UUID [16]byte

// New returns a random UUID.
func New() UUID { return UUID{} }

// NewString returns a random UUID as a string.
func NewString() string { return "" }

// Parse parses s.
func Parse(s string) (UUID, error) { return UUID{}, nil }

// Nil is the empty UUID: a library's variable, read freely.
var Nil UUID
