package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux platform Go supports).
const clockTicks = 100

// cpuSeconds returns the user+system CPU time the nodes' processes have
// used so far (Linux /proc; false elsewhere). The difference across a
// measurement says how much work the cluster did per megabyte, which tells
// a CPU-bound result (both cores busy) from a latency-bound one.
func (c *cluster) cpuSeconds() (float64, bool) {
	var total float64
	for _, p := range c.procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Process.Pid))
		if err != nil {
			return 0, false
		}
		// The command name (field 2) may hold spaces; fields after it
		// are counted from the closing parenthesis.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			return 0, false
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 {
			return 0, false
		}
		// f[0] is field 3 (state): utime is field 14, stime field 15.
		ut, err1 := strconv.ParseFloat(f[11], 64)
		st, err2 := strconv.ParseFloat(f[12], 64)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		total += (ut + st) / clockTicks
	}
	return total, true
}
