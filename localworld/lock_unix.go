//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package localworld

import (
	"errors"
	"os"
	"syscall"
	"time"
)

var errLockTimeout = errors.New("lock timeout")

// lockShared takes a shared flock on f, the kind bbolt's exclusive lock
// excludes, retrying until timeout. Closing f releases it.
func lockShared(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
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
