package record

import (
	"bytes"
	"errors"
	"testing"
)

// mirrorPIDResetFixture is the MIRROR_PID_RESET batch BuildMirrorPIDReset
// must produce for timestamp 1700000000000, leader epoch 5 and source
// cluster "src", written by hand; CRC computed independently.
const mirrorPIDResetFixture = `
00 00 00 00 00 00 00 00   baseOffset            0 (assigned on append)
00 00 00 43               batchLength           67
00 00 00 05               partitionLeaderEpoch  5
02                        magic
50 f5 a8 3a               crc
00 20                     attributes            control, not transactional
00 00 00 00               lastOffsetDelta       0
00 00 01 8b cf e5 68 00   baseTimestamp         1700000000000
00 00 01 8b cf e5 68 00   maxTimestamp          1700000000000
ff ff ff ff ff ff ff ff   producerId            -1
ff ff                     producerEpoch         -1
ff ff ff ff               baseSequence          -1
00 00 00 01               recordsCount          1
22                        record length         varint 17
00                        attributes
00                        timestampDelta        0
00                        offsetDelta           0
08 00 00 00 07            key                   4 bytes: version 0, type 7 (MIRROR_PID_RESET)
0e 00 01 00 03 73 72 63   value                 7 bytes: version 1, sourceClusterId "src"
00                        headers count         0
`

// mirrorPIDResetV0Fixture is a MIRROR_PID_RESET batch of the first
// barriers (value version 0, no source cluster id), which logs written
// before version 1 hold and which must still decode.
const mirrorPIDResetV0Fixture = `
00 00 00 00 00 00 00 00   baseOffset            0 (assigned on append)
00 00 00 3e               batchLength           62
00 00 00 05               partitionLeaderEpoch  5
02                        magic
6d 40 7e c1               crc
00 20                     attributes            control, not transactional
00 00 00 00               lastOffsetDelta       0
00 00 01 8b cf e5 68 00   baseTimestamp         1700000000000
00 00 01 8b cf e5 68 00   maxTimestamp          1700000000000
ff ff ff ff ff ff ff ff   producerId            -1
ff ff                     producerEpoch         -1
ff ff ff ff               baseSequence          -1
00 00 00 01               recordsCount          1
18                        record length         varint 12
00                        attributes
00                        timestampDelta        0
00                        offsetDelta           0
08 00 00 00 07            key                   4 bytes: version 0, type 7 (MIRROR_PID_RESET)
04 00 00                  value                 2 bytes: version 0
00                        headers count         0
`

// commitMarkerFixture is the COMMIT marker BuildEndTxnMarker must produce
// for producer 4000 epoch 2, coordinator epoch 9, timestamp 1700000000000 and
// leader epoch 5.
const commitMarkerFixture = `
00 00 00 00 00 00 00 00   baseOffset            0
00 00 00 42               batchLength           66
00 00 00 05               partitionLeaderEpoch  5
02                        magic
17 39 e4 0b               crc
00 30                     attributes            control, transactional
00 00 00 00               lastOffsetDelta       0
00 00 01 8b cf e5 68 00   baseTimestamp         1700000000000
00 00 01 8b cf e5 68 00   maxTimestamp          1700000000000
00 00 00 00 00 00 0f a0   producerId            4000
00 02                     producerEpoch         2
ff ff ff ff               baseSequence          -1
00 00 00 01               recordsCount          1
20                        record length         varint 16
00                        attributes
00                        timestampDelta        0
00                        offsetDelta           0
08 00 00 00 01            key                   version 0, type 1 (COMMIT)
0c 00 00 00 00 00 09      value                 version 0, coordinatorEpoch 9
00                        headers count         0
`

func TestBuildMirrorPIDResetLayout(t *testing.T) {
	want := decodeFixture(t, mirrorPIDResetFixture)
	got := BuildMirrorPIDReset(1700000000000, 5, "src")
	if !bytes.Equal(got, want) {
		t.Fatalf("BuildMirrorPIDReset:\n got %x\nwant %x", got, want)
	}
	h, err := ParseHeader(got)
	if err != nil {
		t.Fatal(err)
	}
	if !h.IsControl() || h.IsTransactional() || h.HasProducerID() || h.ProducerEpoch != -1 ||
		h.BaseSequence != -1 || h.NumRecords != 1 || h.PartitionLeaderEpoch != 5 {
		t.Fatalf("header %+v", h)
	}
	if ct, err := ControlTypeOf(got); err != nil || ct != ControlMirrorPIDReset {
		t.Fatalf("ControlTypeOf = %v, %v", ct, err)
	}
	if err := ValidateRecords(got, true, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseEndTxnMarker(got); err == nil {
		t.Fatal("ParseEndTxnMarker accepted a MIRROR_PID_RESET batch")
	}
}

func TestParseMirrorPIDReset(t *testing.T) {
	v, err := ParseMirrorPIDReset(decodeFixture(t, mirrorPIDResetFixture))
	if err != nil || v != (MirrorPIDReset{Version: 1, SourceClusterID: "src"}) {
		t.Fatalf("version 1 fixture = %+v, %v", v, err)
	}
	// Barriers written before version 1 still decode, without an id.
	v0 := decodeFixture(t, mirrorPIDResetV0Fixture)
	if err := ValidateRecords(v0, true, 0); err != nil {
		t.Fatal(err)
	}
	if v, err := ParseMirrorPIDReset(v0); err != nil || v != (MirrorPIDReset{}) {
		t.Fatalf("version 0 fixture = %+v, %v", v, err)
	}
	if _, err := ParseMirrorPIDReset(BuildEndTxnMarker(1, 0, EndTxnMarker{Commit: true}, 1, 0)); err == nil {
		t.Fatal("ParseMirrorPIDReset accepted a COMMIT marker")
	}

	for _, c := range []struct {
		name  string
		value []byte
		want  MirrorPIDReset
		ok    bool
	}{
		{"version 0", []byte{0, 0}, MirrorPIDReset{}, true},
		{"version 0 with later bytes", []byte{0, 0, 9, 9}, MirrorPIDReset{}, true},
		{"version 1", []byte{0, 1, 0, 2, 'i', 'd'}, MirrorPIDReset{Version: 1, SourceClusterID: "id"}, true},
		{"version 1 empty id", []byte{0, 1, 0, 0}, MirrorPIDReset{Version: 1}, true},
		{"version 2 with a field appended", []byte{0, 2, 0, 1, 'x', 0, 0, 0, 7}, MirrorPIDReset{Version: 2, SourceClusterID: "x"}, true},
		{"empty", nil, MirrorPIDReset{}, false},
		{"one byte", []byte{0}, MirrorPIDReset{}, false},
		{"negative version", []byte{0xff, 0xfe}, MirrorPIDReset{}, false},
		{"version 1 without id", []byte{0, 1}, MirrorPIDReset{}, false},
		{"version 1 half a length", []byte{0, 1, 0}, MirrorPIDReset{}, false},
		{"id longer than the value", []byte{0, 1, 0, 5, 'a'}, MirrorPIDReset{}, false},
		{"negative id length", []byte{0, 1, 0xff, 0xff}, MirrorPIDReset{}, false},
	} {
		got, err := ParseMirrorPIDResetValue(c.value)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v ok=%v", c.name, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: error %v is not ErrCorrupt", c.name, err)
		}
	}

	// Encoding round-trips, and an id too long for its int16 length is cut.
	for _, v := range []MirrorPIDReset{{}, {Version: 1}, {Version: 1, SourceClusterID: "MKtJYmk1Si63JHU6QdLfjg"}} {
		if got, err := ParseMirrorPIDResetValue(EncodeMirrorPIDReset(v)); err != nil || got != v {
			t.Errorf("round trip of %+v = %+v, %v", v, got, err)
		}
	}
	long := MirrorPIDReset{Version: 1, SourceClusterID: string(bytes.Repeat([]byte("c"), 1<<16))}
	if got, err := ParseMirrorPIDResetValue(EncodeMirrorPIDReset(long)); err != nil || got.SourceClusterID != long.SourceClusterID[:1<<15-1] {
		t.Errorf("a 64 KiB id decodes as %d bytes, %v", len(got.SourceClusterID), err)
	}
}

func TestEndTxnMarkers(t *testing.T) {
	want := decodeFixture(t, commitMarkerFixture)
	got := BuildEndTxnMarker(4000, 2, EndTxnMarker{Commit: true, CoordinatorEpoch: 9}, 1700000000000, 5)
	if !bytes.Equal(got, want) {
		t.Fatalf("commit marker:\n got %x\nwant %x", got, want)
	}
	for _, m := range []EndTxnMarker{{Commit: true, CoordinatorEpoch: 9}, {Commit: false, CoordinatorEpoch: -1}, {Commit: false, CoordinatorEpoch: 1 << 30}} {
		b := BuildEndTxnMarker(77, 3, m, 123, 4)
		if err := ValidateRecords(b, true, 0); err != nil {
			t.Fatal(err)
		}
		h, _ := ParseHeader(b)
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 77 || h.ProducerEpoch != 3 ||
			h.BaseSequence != -1 || h.NumRecords != 1 || h.PartitionLeaderEpoch != 4 || h.MaxTimestamp != 123 {
			t.Fatalf("marker header %+v", h)
		}
		got, err := ParseEndTxnMarker(b)
		if err != nil || got != m {
			t.Fatalf("ParseEndTxnMarker = %+v, %v; want %+v", got, err, m)
		}
		wantType := ControlAbort
		if m.Commit {
			wantType = ControlCommit
		}
		if ct, err := ControlTypeOf(b); err != nil || ct != wantType {
			t.Fatalf("ControlTypeOf = %v, %v", ct, err)
		}
	}
}

func TestParseEndTxnMarkerRejects(t *testing.T) {
	spec := BatchSpec{ProducerID: 1, ProducerEpoch: 1, BaseSequence: -1, Transactional: true, Control: true}
	build := func(key, value []byte) []byte {
		b, err := Build(spec, []Record{{Key: key, Value: value}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := map[string]struct {
		batch   []byte
		corrupt bool
	}{
		"short value":      {build(EncodeControlKey(ControlCommit), []byte{0, 0, 0}), true},
		"null value":       {build(EncodeControlKey(ControlCommit), nil), true},
		"negative version": {build(EncodeControlKey(ControlAbort), []byte{0xff, 0xff, 0, 0, 0, 1}), true},
		"short key":        {build([]byte{0, 0, 1}, []byte{0, 0, 0, 0, 0, 1}), true},
		"leader change":    {build(EncodeControlKey(ControlLeaderChange), []byte{0, 0, 0, 0, 0, 1}), false},
	}
	data, _ := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, []Record{{Key: EncodeControlKey(ControlCommit), Value: []byte{0, 0, 0, 0, 0, 1}}})
	cases["not a control batch"] = struct {
		batch   []byte
		corrupt bool
	}{data, false}
	for name, c := range cases {
		_, err := ParseEndTxnMarker(c.batch)
		if err == nil || errors.Is(err, ErrCorrupt) != c.corrupt {
			t.Errorf("%s: err = %v, want error (corrupt=%v)", name, err, c.corrupt)
		}
	}
	// A later value version with extra bytes is read, as Kafka does.
	m, err := ParseEndTxnMarker(build(EncodeControlKey(ControlCommit), []byte{0, 1, 0, 0, 0, 7, 0xaa}))
	if err != nil || m != (EndTxnMarker{Commit: true, CoordinatorEpoch: 7}) {
		t.Errorf("version 1 marker: %+v, %v", m, err)
	}
}

func TestControlTypesRoundTrip(t *testing.T) {
	names := map[ControlType]string{
		ControlAbort: "ABORT", ControlCommit: "COMMIT", ControlLeaderChange: "LEADER_CHANGE",
		ControlSnapshotHeader: "SNAPSHOT_HEADER", ControlSnapshotFooter: "SNAPSHOT_FOOTER",
		ControlKRaftVersion: "KRAFT_VERSION", ControlKRaftVoters: "KRAFT_VOTERS",
		ControlMirrorPIDReset: "MIRROR_PID_RESET",
	}
	if len(names) != 8 || ControlMirrorPIDReset != 7 {
		t.Fatal("control types must be 0..7 with MIRROR_PID_RESET = 7")
	}
	for ct, name := range names {
		if ct.String() != name {
			t.Errorf("%d.String() = %q, want %q", ct, ct.String(), name)
		}
		key := EncodeControlKey(ct)
		if !bytes.Equal(key, []byte{0, 0, 0, byte(ct)}) {
			t.Errorf("EncodeControlKey(%v) = %x", ct, key)
		}
		for _, c := range allCodecs {
			b, err := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Control: true, Codec: c},
				[]Record{{Key: key, Value: []byte{0, 0}}})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := ControlTypeOf(b); err != nil || got != ct {
				t.Errorf("%v, %v: ControlTypeOf = %v, %v", ct, c, got, err)
			}
		}
	}
	if s := ControlType(99).String(); s != "UNKNOWN(99)" {
		t.Errorf("ControlType(99) = %q", s)
	}
}

func TestParseControlKey(t *testing.T) {
	cases := []struct {
		key     []byte
		want    ControlType
		corrupt bool
	}{
		{[]byte{0, 0, 0, 7}, ControlMirrorPIDReset, false},
		{[]byte{0, 0, 0, 1, 9, 9}, ControlCommit, false}, // trailing bytes of a later version
		{[]byte{0, 3, 0, 0}, ControlAbort, false},        // later key version
		{[]byte{0, 0, 0, 99}, ControlType(99), false},    // unknown type passed through
		{[]byte{0xff, 0xff, 0, 1}, 0, true},              // negative version
		{[]byte{0, 0, 0}, 0, true},
		{nil, 0, true},
	}
	for _, c := range cases {
		got, err := ParseControlKey(c.key)
		if c.corrupt {
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("ParseControlKey(%x): err = %v, want ErrCorrupt", c.key, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseControlKey(%x) = %v, %v; want %v", c.key, got, err, c.want)
		}
	}
}

func TestControlTypeOfRejects(t *testing.T) {
	data, _ := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, []Record{{Key: EncodeControlKey(ControlCommit)}})
	if _, err := ControlTypeOf(data); err == nil {
		t.Error("ControlTypeOf accepted a data batch")
	}
	empty, _ := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Control: true}, nil)
	if _, err := ControlTypeOf(empty); !errors.Is(err, ErrCorrupt) {
		t.Errorf("empty control batch: %v", err)
	}
	nullKey, _ := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Control: true}, []Record{{Value: []byte{0, 0}}})
	if _, err := ControlTypeOf(nullKey); !errors.Is(err, ErrCorrupt) {
		t.Errorf("null control key: %v", err)
	}
	if _, err := ControlTypeOf([]byte{1, 2, 3}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("garbage: %v", err)
	}
}
