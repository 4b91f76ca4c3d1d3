//go:build linux

package localworld

import (
	"errors"
	"os"
	"syscall"
)

// fdatasync forces f's data, and the metadata needed to read it back, to
// stable storage: one device flush, where fsync may also write the inode.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if !errors.Is(err, syscall.EINTR) {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

// preallocate makes f size bytes long, allocating the blocks (so that a
// later write cannot fail for want of space), or only extending it where
// the file system cannot allocate ahead.
func preallocate(f *os.File, size int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOSYS):
			return f.Truncate(size)
		}
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
}
