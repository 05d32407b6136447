package main

import "os"

// The log warms the page cache ahead of small appends (internal/storage,
// segment_warm.go): it extends its file with zeros to the next 256 KiB
// boundary before an append of at most 64 KiB crosses it, and the appends
// overwrite the zeros. Plain pwrite of 16 KiB pieces is then no longer the
// machine's limit for such appends, so the paired runs measure a third
// side, "raw warm": pwrite of the same bytes with the same zero-filling
// ahead, the best this write pattern allows.

const (
	rawWarmChunk     = 256 << 10 // storage's warmChunk
	rawWarmMaxAppend = 64 << 10  // storage's warmMaxAppend
)

var rawWarmZeros = make([]byte, rawWarmChunk)

// warmWriter appends to a file as the log writes a segment it warms.
type warmWriter struct {
	f        *os.File
	pos, end int64 // data end, zero-filled end
	warm     bool  // false: plain pwrite (the log does not warm with a flush policy)
}

func (w *warmWriter) write(b []byte) error {
	n := int64(len(b))
	if w.warm && n <= rawWarmMaxAppend && w.pos+n > w.end {
		from := max(w.end, w.pos)
		to := (w.pos + n + rawWarmChunk - 1) / rawWarmChunk * rawWarmChunk
		if _, err := w.f.WriteAt(rawWarmZeros[:to-from], from); err != nil {
			return err
		}
		w.end = to
	}
	if _, err := w.f.WriteAt(b, w.pos); err != nil {
		return err
	}
	w.pos += n
	return nil
}
