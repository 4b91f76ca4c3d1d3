//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package localworld

import (
	"errors"
	"os"
	"time"
)

var errLockTimeout = errors.New("lock timeout")

// exclusiveLocks says that lockExclusive keeps other processes out: not
// here.
const exclusiveLocks = false

// lockShared is a no-op where flock is unavailable.
func lockShared(*os.File, time.Duration) error { return nil }

// lockExclusive is a no-op where flock is unavailable: there, nothing keeps
// a second process from opening a log store.
func lockExclusive(*os.File, time.Duration) error { return nil }
