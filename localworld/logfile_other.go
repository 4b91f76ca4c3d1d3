//go:build !linux

package localworld

import "os"

// fdatasync forces f's data to stable storage (an fsync where there is no
// fdatasync; on darwin, Go's Sync is F_FULLFSYNC).
func fdatasync(f *os.File) error { return f.Sync() }

// preallocate extends f to size bytes.
func preallocate(f *os.File, size int64) error { return f.Truncate(size) }
