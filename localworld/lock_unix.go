//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package localworld

import (
	"errors"
	"os"
	"syscall"
	"time"
)

var errLockTimeout = errors.New("lock timeout")

// exclusiveLocks says that lockExclusive keeps other processes out.
const exclusiveLocks = true

// lockExclusive takes an exclusive flock on f, retrying until timeout. The
// log store holds it while open: it proves that no other process has the
// store open. Closing f releases it.
func lockExclusive(f *os.File, timeout time.Duration) error {
	return lockRetry(f, syscall.LOCK_EX, timeout)
}

// lockShared takes a shared flock on f, which a bbolt writer's exclusive
// lock excludes (MigrateBolt reads under it), retrying until timeout. Closing f releases it.
func lockShared(f *os.File, timeout time.Duration) error {
	return lockRetry(f, syscall.LOCK_SH, timeout)
}

func lockRetry(f *os.File, how int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return err
		case time.Now().After(deadline):
			return errLockTimeout
		}
		time.Sleep(10 * time.Millisecond)
	}
}
