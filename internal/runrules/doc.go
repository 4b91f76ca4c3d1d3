// Package runrules holds the rules of a run that only Skein's own packages
// apply on the world/ types: the patch markers a creation event carries,
// the input digest replay compares, and the limits a World enforces. A
// World implementer needs none of it (world/worldtest checks a World
// without it); the engine, the SDK and the encrypting wrapper share it.
//
// It imports world/ and nothing else of the module, so any package may use
// it; world/ itself cannot (it depends on no other package of the module).
package runrules
