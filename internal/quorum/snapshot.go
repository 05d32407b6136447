package quorum

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/metadata"
)

// A metadata snapshot (raft's state.bin; raft's file store adds a CRC-64 in
// meta.json) is:
//
//	"KMIRMETA"            8-byte magic
//	uint16                format version (1)
//	uint64 applied        raft index of the last entry applied
//	uint64 imageOffset    Image.Offset()
//	repeated:             uvarint length (> 0) + metadata.Encode(record)
//	uvarint 0             end of records
//	uint64 count          number of records, to detect truncation
//
// The records are Image.ToRecords(); replayed onto the empty image at
// imageOffset they rebuild the image.
var snapshotMagic = []byte("KMIRMETA")

const snapshotVersion = 1

// maxSnapshotRecord bounds one record's length; the largest real records
// (a partition with many replicas, a broker with many endpoints) are far
// smaller.
const maxSnapshotRecord = 64 << 20

func writeSnapshot(w io.Writer, img *metadata.Image, applied uint64) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	hdr := append([]byte(nil), snapshotMagic...)
	hdr = binary.BigEndian.AppendUint16(hdr, snapshotVersion)
	hdr = binary.BigEndian.AppendUint64(hdr, applied)
	hdr = binary.BigEndian.AppendUint64(hdr, img.Offset())
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	var buf []byte
	var n uint64
	for _, r := range img.ToRecords() {
		buf = metadata.Encode(buf[:0], r)
		var lenBuf [binary.MaxVarintLen64]byte
		if _, err := bw.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(buf)))]); err != nil {
			return err
		}
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		n++
	}
	tail := binary.AppendUvarint(nil, 0)
	tail = binary.BigEndian.AppendUint64(tail, n)
	if _, err := bw.Write(tail); err != nil {
		return err
	}
	return bw.Flush()
}

var errSnapshotCorrupt = fmt.Errorf("corrupt metadata snapshot: %w", kerr.CorruptMessage)

// readSnapshot rebuilds an image from a snapshot. It never panics on bad
// bytes and allocates record buffers only as bytes actually arrive.
func readSnapshot(r io.Reader) (*metadata.Image, uint64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	hdr := make([]byte, len(snapshotMagic)+2+8+8)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, 0, fmt.Errorf("header: %v: %w", err, errSnapshotCorrupt)
	}
	if !bytes.Equal(hdr[:8], snapshotMagic) {
		return nil, 0, fmt.Errorf("bad magic %q: %w", hdr[:8], errSnapshotCorrupt)
	}
	if v := binary.BigEndian.Uint16(hdr[8:10]); v != snapshotVersion {
		return nil, 0, fmt.Errorf("snapshot format version %d, this node reads %d: %w", v, snapshotVersion, kerr.UnsupportedVersion)
	}
	applied := binary.BigEndian.Uint64(hdr[10:18])
	offset := binary.BigEndian.Uint64(hdr[18:26])
	d := metadata.NewDelta(metadata.EmptyImage())
	var buf bytes.Buffer
	var n uint64
	for {
		size, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, 0, fmt.Errorf("record %d length: %v: %w", n, err, errSnapshotCorrupt)
		}
		if size == 0 {
			break
		}
		if size > maxSnapshotRecord {
			return nil, 0, fmt.Errorf("record %d claims %d bytes: %w", n, size, errSnapshotCorrupt)
		}
		buf.Reset()
		if _, err := io.CopyN(&buf, br, int64(size)); err != nil {
			return nil, 0, fmt.Errorf("record %d: %v: %w", n, err, errSnapshotCorrupt)
		}
		rec, err := metadata.Decode(buf.Bytes())
		if err != nil {
			return nil, 0, fmt.Errorf("record %d: %w", n, err)
		}
		if err := d.Replay(rec, offset); err != nil {
			return nil, 0, fmt.Errorf("record %d: %w", n, err)
		}
		n++
	}
	var cnt [8]byte
	if _, err := io.ReadFull(br, cnt[:]); err != nil {
		return nil, 0, fmt.Errorf("trailer: %v: %w", err, errSnapshotCorrupt)
	}
	if want := binary.BigEndian.Uint64(cnt[:]); want != n {
		return nil, 0, fmt.Errorf("snapshot holds %d records, trailer says %d: %w", n, want, errSnapshotCorrupt)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		return nil, 0, fmt.Errorf("bytes after the trailer: %w", errSnapshotCorrupt)
	}
	// An image whose records were all removed has none to replay; a no-op
	// carries its offset.
	if err := d.Replay(&metadata.NoOpRecord{}, offset); err != nil {
		return nil, 0, fmt.Errorf("snapshot offset %d: %w", offset, err)
	}
	return d.Apply(), applied, nil
}
