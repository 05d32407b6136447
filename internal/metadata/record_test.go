package metadata

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func testUUID(b byte) Uuid {
	var u Uuid
	for i := range u {
		u[i] = b + byte(i)
	}
	return u
}

func i32(v int32) *int32 { return &v }

func lrs(v LeaderRecoveryState) *LeaderRecoveryState { return &v }

// sampleRecords returns at least one populated record of every type the
// decoder knows, with edge values (empty and null arrays, removals, tagged
// fields set and unset).
func sampleRecords() []Record {
	return []Record{
		&RegisterBrokerRecord{BrokerRegistration{
			ID: 3, IncarnationID: testUUID(1), Epoch: 1 << 40,
			Endpoints: []Endpoint{
				{Name: "PLAINTEXT", Host: "b3.example", Port: 9092, SecurityProtocol: SecurityPlaintext},
				{Name: "CONTROLLER", Host: "10.0.0.3", Port: 65535, SecurityProtocol: SecuritySASLSSL},
			},
			Features: []BrokerFeature{{Name: MetadataVersionFeature, MinSupported: 1, MaxSupported: 21}},
			Rack:     "rack-a", Fenced: true, InControlledShutdown: true,
		}},
		&RegisterBrokerRecord{BrokerRegistration{ID: 0, Epoch: -1}},
		&UnregisterBrokerRecord{BrokerID: 7, BrokerEpoch: 99},
		&FenceBrokerRecord{ID: 1, Epoch: 5},
		&UnfenceBrokerRecord{ID: 2, Epoch: 6},
		&BrokerRegistrationChangeRecord{BrokerID: 4, BrokerEpoch: 8, Fenced: FencingUnfence, InControlledShutdown: ShutdownStarted},
		&BrokerRegistrationChangeRecord{BrokerID: 4, BrokerEpoch: 8},
		&TopicRecord{Name: "orders", ID: testUUID(2)},
		&PartitionRecord{TopicID: testUUID(2), Partition: 5, PartitionState: PartitionState{
			Replicas: []int32{1, 2, 3, 4}, ISR: []int32{1, 2}, RemovingReplicas: []int32{4}, AddingReplicas: []int32{3},
			Leader: 1, LeaderRecoveryState: Recovering, LeaderEpoch: 12, PartitionEpoch: 40,
		}},
		&PartitionRecord{TopicID: testUUID(2), Partition: 0, PartitionState: PartitionState{
			Replicas: []int32{1}, Leader: NoLeader,
		}},
		&PartitionChangeRecord{TopicID: testUUID(2), Partition: 1, ISR: []int32{1, 3}, Leader: i32(3),
			Replicas: []int32{1, 3}, RemovingReplicas: []int32{}, AddingReplicas: []int32{9}, LeaderRecoveryState: lrs(Recovered)},
		&PartitionChangeRecord{TopicID: testUUID(2), Partition: 2, Leader: i32(NoLeader)},
		&PartitionChangeRecord{TopicID: testUUID(2), Partition: 3, LeaderEpoch: i32(1 << 20)},
		&PartitionChangeRecord{TopicID: testUUID(2), Partition: 3, Leader: i32(2), ISR: []int32{2}, LeaderEpoch: i32(0)},
		&PartitionChangeRecord{TopicID: testUUID(2), Partition: 2},
		&RemoveTopicRecord{ID: testUUID(2)},
		SetConfig(ConfigResource{ResourceTopic, "orders"}, "retention.ms", "1000"),
		SetConfig(ConfigResource{ResourceBroker, ""}, "log.retention.hours", ""),
		RemoveConfig(ConfigResource{ResourceMirror, "east"}, "bootstrap.servers"),
		&ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 2, NextProducerID: 2000},
		&AccessControlEntryRecord{ACLEntry{ID: testUUID(3), ResourceType: ACLResourceTopic, ResourceName: "orders",
			PatternType: ACLPatternPrefixed, Principal: "User:alice", Host: "*", Operation: ACLOperationRead, Permission: ACLPermissionAllow}},
		&RemoveAccessControlEntryRecord{ID: testUUID(3)},
		&UserScramCredentialRecord{ScramCredential{Name: "alice", Mechanism: ScramSHA512,
			Salt: []byte("salt"), StoredKey: []byte{1, 2, 3}, ServerKey: []byte{4, 5}, Iterations: 4096}},
		&RemoveUserScramCredentialRecord{Name: "alice", Mechanism: ScramSHA256},
		&ClientQuotaRecord{Entity: QuotaEntity{{Type: QuotaEntityClientID, Default: true}, {Type: QuotaEntityUser, Name: "alice"}}, Key: "producer_byte_rate", Value: 1024.5},
		&ClientQuotaRecord{Entity: QuotaEntity{{Type: QuotaEntityIP, Name: ""}}, Key: "connection_creation_rate", Remove: true},
		&FeatureLevelRecord{Name: MetadataVersionFeature, Level: 21},
		&NoOpRecord{},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	covered := map[RecordType]bool{}
	for _, r := range sampleRecords() {
		covered[r.Type()] = true
		b := Encode(nil, r)
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: decode: %v", r.Type(), err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("%s: round trip\n got %#v\nwant %#v", r.Type(), got, r)
		}
		if again := Encode(nil, got); !bytes.Equal(again, b) {
			t.Errorf("%s: re-encoding differs", r.Type())
		}
	}
	for typ := range recordSpecs {
		if !covered[typ] {
			t.Errorf("no sample record of %s", typ)
		}
	}
}

// TestRecordWireFormat pins the exact bytes of a few records to Kafka's
// encoding, so an accidental layout change fails here.
func TestRecordWireFormat(t *testing.T) {
	id := testUUID(0x10)
	tests := []struct {
		r    Record
		want []byte
	}{
		{&TopicRecord{Name: "ab", ID: id},
			cat([]byte{1, 2, 0}, []byte{3, 'a', 'b'}, id[:], []byte{0})},
		{&RemoveTopicRecord{ID: id}, cat([]byte{1, 9, 0}, id[:], []byte{0})},
		{&NoOpRecord{}, []byte{1, 20, 0, 0}},
		// Leader=3 is tag 1 (4 bytes), Isr is tag 0 (compact array of one).
		{&PartitionChangeRecord{TopicID: id, Partition: 7, ISR: []int32{3}, Leader: i32(3)},
			cat([]byte{1, 5, 0}, []byte{0, 0, 0, 7}, id[:], []byte{2, 0, 5, 2, 0, 0, 0, 3, 1, 4, 0, 0, 0, 3})},
		// kmirror's minimum leader epoch is tag 0x4b4e (varint 0xce 0x96 0x01).
		{&PartitionChangeRecord{TopicID: id, Partition: 7, LeaderEpoch: i32(9)},
			cat([]byte{1, 5, 0}, []byte{0, 0, 0, 7}, id[:], []byte{1, 0xce, 0x96, 0x01, 4, 0, 0, 0, 9})},
		{RemoveConfig(ConfigResource{ResourceTopic, "t"}, "k"),
			[]byte{1, 4, 0, 2, 2, 't', 2, 'k', 0, 0}},
		{&BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 2, Fenced: FencingUnfence},
			[]byte{1, 17, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 1, 0, 1, 0xff}},
	}
	for _, tt := range tests {
		if got := Encode(nil, tt.r); !bytes.Equal(got, tt.want) {
			t.Errorf("%s:\n got % x\nwant % x", tt.r.Type(), got, tt.want)
		}
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestDecodeOtherVersions decodes versions that kmirror reads but does not
// write, built by hand from Kafka's schemas.
func TestDecodeOtherVersions(t *testing.T) {
	inc := testUUID(0x20)
	logDir := testUUID(0x40)
	// RegisterBrokerRecord v3: IsMigratingZkBroker after BrokerId, LogDirs as tag 0.
	v3 := cat([]byte{1, 0, 3}, []byte{0, 0, 0, 9}, []byte{0}, inc[:], []byte{0, 0, 0, 0, 0, 0, 0, 4},
		[]byte{2, 2, 'P', 2, 'h', 0x23, 0x84, 0, 0, 0}, // one endpoint "P" h:9092 PLAINTEXT
		[]byte{1},                      // no features
		[]byte{0},                      // null rack
		[]byte{0, 1},                   // not fenced, in controlled shutdown
		[]byte{1, 0, 17, 2}, logDir[:]) // tag 0: one log dir
	got, err := Decode(v3)
	if err != nil {
		t.Fatalf("decode v3: %v", err)
	}
	want := &RegisterBrokerRecord{BrokerRegistration{ID: 9, IncarnationID: inc, Epoch: 4,
		Endpoints: []Endpoint{{Name: "P", Host: "h", Port: 9092}}, InControlledShutdown: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("v3:\n got %#v\nwant %#v", got, want)
	}
	// RegisterBrokerRecord v0 has no InControlledShutdown.
	v0 := cat([]byte{1, 0, 0}, []byte{0, 0, 0, 9}, inc[:], []byte{0, 0, 0, 0, 0, 0, 0, 4},
		[]byte{1, 1, 0, 1, 0})
	if got, err = Decode(v0); err != nil {
		t.Fatalf("decode v0: %v", err)
	}
	if reg := got.(*RegisterBrokerRecord); !reg.Fenced || reg.InControlledShutdown || reg.ID != 9 {
		t.Errorf("v0: %+v", reg)
	}
	// PartitionRecord v2: Directories after PartitionEpoch, ELR as tags 1, 2.
	tid := testUUID(0x30)
	p2 := cat([]byte{1, 3, 2}, []byte{0, 0, 0, 1}, tid[:],
		[]byte{2, 0, 0, 0, 5}, []byte{2, 0, 0, 0, 5}, []byte{1}, []byte{1},
		[]byte{0, 0, 0, 5}, []byte{0, 0, 0, 2}, []byte{0, 0, 0, 3},
		[]byte{2}, logDir[:],
		[]byte{2, 1, 1, 1, 2, 1, 1})
	if got, err = Decode(p2); err != nil {
		t.Fatalf("decode PartitionRecord v2: %v", err)
	}
	wantP := &PartitionRecord{TopicID: tid, Partition: 1, PartitionState: PartitionState{
		Replicas: []int32{5}, ISR: []int32{5}, Leader: 5, LeaderEpoch: 2, PartitionEpoch: 3}}
	if !reflect.DeepEqual(got, wantP) {
		t.Errorf("PartitionRecord v2:\n got %#v\nwant %#v", got, wantP)
	}
}

func TestDecodeRejectsBadInput(t *testing.T) {
	for _, r := range sampleRecords() {
		b := Encode(nil, r)
		for n := 0; n < len(b); n++ {
			if _, err := Decode(b[:n]); err == nil {
				t.Errorf("%s truncated to %d of %d bytes decoded without error", r.Type(), n, len(b))
			} else if !errors.Is(err, kerr.CorruptMessage) {
				t.Errorf("%s truncated: %v does not wrap CorruptMessage", r.Type(), err)
			}
		}
		if _, err := Decode(append(b, 0)); err == nil || !strings.Contains(err.Error(), "trailing") {
			t.Errorf("%s with a trailing byte: %v", r.Type(), err)
		}
	}
	tests := []struct {
		name string
		b    []byte
		want string
		code *kerr.Error
	}{
		{"frame version", []byte{2, 20, 0, 0}, "frame version 2", kerr.CorruptMessage},
		{"unknown type", []byte{1, 6, 0, 0}, "RecordType(6)", kerr.CorruptMessage},
		{"named unsupported type", []byte{1, 10, 0, 0}, "DelegationTokenRecord", kerr.CorruptMessage},
		{"future version", []byte{1, 2, 1, 0}, "TopicRecord", kerr.UnsupportedVersion},
		{"long varint", []byte{1, 0x80, 0x80, 0x80, 0x80, 0x80, 0}, "varint", kerr.CorruptMessage},
		{"huge array", cat([]byte{1, 3, 0}, make([]byte, 20), []byte{0xff, 0xff, 0xff, 0x0f}), "cannot fit", kerr.CorruptMessage},
		{"null name", []byte{1, 2, 0, 0}, "null", kerr.CorruptMessage},
		{"tag overruns", []byte{1, 20, 0, 1, 0, 5, 1}, "tag 0", kerr.CorruptMessage},
		{"bad known tag", cat([]byte{1, 17, 1}, make([]byte, 12), []byte{1, 0, 2, 1, 1}), "unread", kerr.CorruptMessage},
	}
	for _, tt := range tests {
		_, err := Decode(tt.b)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.code) {
			t.Errorf("%s: got %v, want an error containing %q wrapping %v", tt.name, err, tt.want, tt.code.Message)
		}
	}
}

func TestUnknownTagsAreSkipped(t *testing.T) {
	// A NoOpRecord with an unknown tag 9 of 3 bytes, as a newer writer might
	// send.
	r, err := Decode([]byte{1, 20, 0, 1, 9, 3, 'x', 'y', 'z'})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.(*NoOpRecord); !ok {
		t.Fatalf("got %T", r)
	}
}

func TestRecordTypeString(t *testing.T) {
	if got := TypePartitionChange.String(); got != "PartitionChangeRecord" {
		t.Errorf("got %q", got)
	}
	if got := RecordType(999).String(); got != "RecordType(999)" {
		t.Errorf("got %q", got)
	}
}

func TestBatchRoundTrip(t *testing.T) {
	rs := sampleRecords()
	b := EncodeBatch(nil, rs)
	got, err := DecodeBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rs) {
		t.Fatalf("batch round trip differs")
	}
	empty, err := DecodeBatch(EncodeBatch(nil, nil))
	if err != nil || len(empty) != 0 {
		t.Fatalf("empty batch: %v %v", empty, err)
	}
	for n := 0; n < len(b); n++ {
		if _, err := DecodeBatch(b[:n]); err == nil {
			t.Fatalf("batch truncated to %d bytes decoded", n)
		}
	}
}

func TestDecodeBatchErrorsNameTheRecord(t *testing.T) {
	b := EncodeBatch(nil, []Record{&NoOpRecord{}, &TopicRecord{Name: "x", ID: testUUID(1)}})
	b[len(b)-19] = 0 // the TopicRecord's name becomes null
	_, err := DecodeBatch(b)
	if err == nil || !strings.Contains(err.Error(), "record 1") || !strings.Contains(err.Error(), "TopicRecord") {
		t.Fatalf("got %v", err)
	}
	// A count that the bytes cannot hold is refused before allocating.
	if _, err := DecodeBatch([]byte{0, 0xff, 0xff, 0xff, 0x07}); err == nil || !strings.Contains(err.Error(), "claims") {
		t.Fatalf("forged count: %v", err)
	}
	if _, err := DecodeBatch([]byte{1, 0}); err == nil || !strings.Contains(err.Error(), "batch version") {
		t.Fatalf("batch version: %v", err)
	}
}
