package main

import (
	"fmt"
	"os"
)

// primePageCache writes n bytes to a scratch file in dir and deletes it,
// so that a run finds that much recently freed memory. This machine is a
// virtual machine that hands free memory back to its host (free page
// reporting): page cache set up in memory freed long ago pays a host fault
// per page, and large page-cache folios (which the warm-ahead sides set up)
// pay it most; priming makes every run start from the same state
// (bench/broker does the same; see docs/benchmarks.md).
func primePageCache(dir string, n int64) error {
	f, err := os.CreateTemp(dir, "prime-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 1<<20)
	for written := int64(0); written < n; {
		k := min(int64(len(buf)), n-written)
		if _, err := f.Write(buf[:k]); err != nil {
			return fmt.Errorf("prime the page cache: %w", err)
		}
		written += k
	}
	return nil
}
