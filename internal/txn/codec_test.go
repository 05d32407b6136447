package txn

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
)

func TestCodecRoundTrip(t *testing.T) {
	a0, a2, b1 := tp("a", 0), tp("a", 2), tp("b", 1)
	for _, orig := range []*Txn{
		meta(Empty, 0),
		meta(Ongoing, 3, a0, a2, b1),
		meta(PrepareCommit, 3, a0),
		meta(PrepareAbort, 7, a0, b1),
		meta(CompleteCommit, 3),
		meta(CompleteAbort, 3),
	} {
		key, value := EncodeKey(orig.ID), EncodeValue(orig)
		id, err := DecodeKey(key)
		if err != nil || id != orig.ID {
			t.Fatalf("%s key: %q %v", orig.State, id, err)
		}
		got, err := DecodeValue(id, value)
		if err != nil {
			t.Fatalf("%s value: %v", orig.State, err)
		}
		if !reflect.DeepEqual(got, orig) {
			t.Errorf("%s round trip:\n got %+v\nwant %+v", orig.State, *got, *orig)
		}
	}
	if v := EncodeValue(with(meta(Empty, 1), func(t *Txn) { t.State = Dead })); v != nil {
		t.Errorf("Dead must be a tombstone, got %x", v)
	}
}

// TestCodecKafkaLayout checks the bytes against Kafka's schema as kmsg
// reads it: key version 0, value version 0, a null partition list for Empty
// and the partitions grouped by topic otherwise.
func TestCodecKafkaLayout(t *testing.T) {
	key := EncodeKey("my-id")
	want := []byte{0, 0, 0, 5, 'm', 'y', '-', 'i', 'd'}
	if !bytes.Equal(key, want) {
		t.Errorf("key %x, want %x", key, want)
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(EncodeValue(meta(Empty, 4))); err != nil {
		t.Fatal(err)
	}
	if v.Version != 0 || v.Topics != nil || v.ProducerID != pid || v.ProducerEpoch != 4 || v.State != kmsg.TransactionState(Empty) ||
		v.TimeoutMillis != 60_000 || v.StartTimestamp != -1 || v.LastUpdateTimestamp != 1_000 {
		t.Errorf("empty value: %+v", v)
	}
	if err := v.ReadFrom(EncodeValue(meta(Ongoing, 4, tp("a", 0), tp("a", 3), tp("b", 1)))); err != nil {
		t.Fatal(err)
	}
	wantTopics := []kmsg.TxnMetadataValueTopic{{Topic: "a", Partitions: []int32{0, 3}}, {Topic: "b", Partitions: []int32{1}}}
	if v.State != kmsg.TransactionState(Ongoing) || !reflect.DeepEqual(v.Topics, wantTopics) || v.StartTimestamp != 500 {
		t.Errorf("ongoing value: %+v", v)
	}
	if err := v.ReadFrom(EncodeValue(meta(CompleteCommit, 4))); err != nil {
		t.Fatal(err)
	}
	if v.Topics == nil || len(v.Topics) != 0 {
		t.Errorf("complete value must carry an empty (not null) partition list: %#v", v.Topics)
	}
}

// TestDecodeVersion1 reads the flexible version Kafka 4 writes with
// transaction.version 2.
func TestDecodeVersion1(t *testing.T) {
	v := kmsg.NewTxnMetadataValue()
	v.Version = 1
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = 42, 3, 10_000
	v.State = kmsg.TransactionState(PrepareCommit)
	v.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "t", Partitions: []int32{2, 1}}}
	v.LastUpdateTimestamp, v.StartTimestamp = 77, 70
	v.PreviousProducerID = 41
	got, err := DecodeValue("x", v.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := &Txn{ID: "x", ProducerID: 42, ProducerEpoch: 3, LastProducerID: 41, LastProducerEpoch: -1, TimeoutMs: 10_000,
		State: PrepareCommit, Partitions: []storage.TopicPartition{tp("t", 1), tp("t", 2)}, StartTime: 70, LastUpdate: 77}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", *got, *want)
	}
}

func TestDecodeMalformed(t *testing.T) {
	good := EncodeValue(meta(Ongoing, 1, tp("a", 0)))
	value := func(f func(*kmsg.TxnMetadataValue)) []byte {
		var v kmsg.TxnMetadataValue
		if err := v.ReadFrom(good); err != nil {
			t.Fatal(err)
		}
		f(&v)
		return v.AppendTo(nil)
	}
	for name, b := range map[string][]byte{
		"short":               {0},
		"unknown version":     append([]byte{0, 9}, good[2:]...),
		"negative version":    append([]byte{0xff, 0xff}, good[2:]...),
		"truncated":           good[:len(good)-3],
		"prepare epoch fence": value(func(v *kmsg.TxnMetadataValue) { v.State = kmsg.TransactionState(PrepareEpochFence) }),
		"unknown state":       value(func(v *kmsg.TxnMetadataValue) { v.State = 12 }),
		"negative producer":   value(func(v *kmsg.TxnMetadataValue) { v.ProducerID = -1 }),
		"zero timeout":        value(func(v *kmsg.TxnMetadataValue) { v.TimeoutMillis = 0 }),
		"negative partition":  value(func(v *kmsg.TxnMetadataValue) { v.Topics[0].Partitions[0] = -2 }),
		"empty topic":         value(func(v *kmsg.TxnMetadataValue) { v.Topics[0].Topic = "" }),
	} {
		if _, err := DecodeValue("x", b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	for name, b := range map[string][]byte{
		"short":         {0},
		"version 1":     {0, 1, 0, 1, 'x'},
		"empty id":      {0, 0, 0, 0},
		"truncated":     {0, 0, 0, 5, 'a'},
		"negative size": {0, 0, 0xff, 0xfe},
	} {
		if _, err := DecodeKey(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("key %s: %v, want ErrMalformed", name, err)
		}
	}
	// A Dead value decodes (the loader removes the id).
	d, err := DecodeValue("x", value(func(v *kmsg.TxnMetadataValue) { v.State = kmsg.TransactionState(Dead) }))
	if err != nil || d.State != Dead {
		t.Errorf("dead value: %v %v", d, err)
	}
}
