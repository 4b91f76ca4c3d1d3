//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package localworld

import (
	"errors"
	"os"
	"time"
)

var errLockTimeout = errors.New("lock timeout")

// lockShared is a no-op where flock is unavailable; bbolt's own lock still
// keeps a second writer out.
func lockShared(*os.File, time.Duration) error { return nil }
