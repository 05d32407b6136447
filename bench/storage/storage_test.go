package main

import "testing"

// The same scenarios as the command, as Go benchmarks:
//
//	go test ./bench/storage -run '^$' -bench . -benchtime 500x -count 3
//
// Each BenchmarkAppend/BenchmarkRead sub-benchmark pair (log, raw) runs in
// the same process on the same disk; compare their MB/s. Use a fixed
// iteration count (-benchtime Nx) that keeps a run below 1 GiB: with a time
// target, runs that cross a segment roll measure the disk's fsync of the
// rolled segment more than the code.

func BenchmarkAppend(b *testing.B) {
	for _, sc := range scenarios {
		b.Run(sc.name+"/log", func(b *testing.B) { benchLogAppend(b, sc, b.TempDir()) })
		b.Run(sc.name+"/raw", func(b *testing.B) { benchRawAppend(b, sc, b.TempDir()) })
	}
}

func BenchmarkRead(b *testing.B) {
	for _, sc := range scenarios {
		if sc.sync || sc.follower {
			continue
		}
		b.Run(sc.name+"/log", func(b *testing.B) { benchLogRead(b, sc, b.TempDir()) })
		b.Run(sc.name+"/raw", func(b *testing.B) { benchRawRead(b, sc, b.TempDir()) })
	}
}
