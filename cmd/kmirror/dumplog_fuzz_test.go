package main

import (
	"io"
	"testing"

	"github.com/kmirror/kmirror/internal/record"
)

// FuzzDumpLog feeds arbitrary file contents to every dump-log printer:
// files on disk are untrusted, and a damaged file must be reported, never
// crash the tool.
func FuzzDumpLog(f *testing.F) {
	f.Add(record.BuildMirrorPIDReset(1, 2))
	f.Add(record.BuildEndTxnMarker(7, 0, record.EndTxnMarker{Commit: true, CoordinatorEpoch: 3}, 1, 2))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 9})
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, decoder := range []bool{false, true} {
			fl := dumpLogFlags{printData: true, mirrorDecoder: decoder, maxBytes: 1 << 20}
			if err := dumpSegment(io.Discard, b, 0, fl); err != nil {
				t.Fatalf("dumpSegment failed instead of reporting: %v", err)
			}
		}
		_ = dumpOffsetIndex(io.Discard, b, 0)
		_ = dumpTimeIndex(io.Discard, b, 0)
		_ = dumpSnapshot(io.Discard, b)
	})
}
