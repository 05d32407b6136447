// Package pagecache puts the benchmarks' measurements in the same memory
// state.
package pagecache

import (
	"fmt"
	"os"
)

// Prime writes n bytes to a scratch file in dir and deletes it, untimed,
// right before a measurement that allocates memory (page cache or heap) at
// its own pace. On a virtual machine that returns free memory to its host
// (free page reporting, as on the machine the figures in docs/benchmarks.md
// come from), a page freed a few seconds ago costs a fault in the host on
// its next use: appending to a fresh file ran at 1.0-1.3 GB/s five seconds
// after a delete and at 3.5-4.6 GB/s right after one, and large page-cache
// folios pay it most. Priming puts every measurement in the second state,
// that of a machine whose free memory is simply free, instead of in
// whichever state the previous step left.
func Prime(dir string, n int64) error {
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
