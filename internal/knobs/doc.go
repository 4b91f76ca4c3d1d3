// Package knobs carries the settings that only Skein's own wiring and tests
// set: clocks, entropy, poll waits, cache sizes and fault-injection hooks.
//
// A constructor of a public package that has such settings takes a
// trailing variadic parameter of type Option (for example
// worker.New(cfg, opts...)). Users call it without options; since this
// package is internal, they cannot build one, so these settings are not
// part of the public surface. Skein's packages, skeintest and skeinlambda
// can. The zero value of every field means the constructor's own default.
//
// Set is split by the component that reads it (Host, Worker, World), each
// in its own file.
package knobs
