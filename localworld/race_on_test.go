//go:build race

package localworld

// raceEnabled: the race detector drops sync.Pool items at random, so
// allocation counts that rest on a pool are not checked under it.
const raceEnabled = true
