// Package errgroup is a stub of golang.org/x/sync/errgroup for the fixtures.
package errgroup

// Group runs functions on goroutines.
type Group struct{}

// Go runs f on a new goroutine.
func (g *Group) Go(f func() error) { go f() }

// TryGo runs f on a new goroutine.
func (g *Group) TryGo(f func() error) bool { go f(); return true }

// Wait waits for the goroutines.
func (g *Group) Wait() error { return nil }
