package txn

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
)

// The record format of __transaction_state is Kafka's: the key is
// TxnMetadataKey version 0 (the transactional id), the value
// TxnMetadataValue version 0 (Kafka writes version 1, flexible, only with
// transaction.version 2, which kmirror does not implement; it reads both).
// A transactional id that expires is a tombstone.

// ErrMalformed is wrapped by every decode error.
var ErrMalformed = errors.New("malformed __transaction_state record")

const (
	keyVersion      = 0
	valueVersion    = 0
	maxValueVersion = 1
)

// EncodeKey returns the record key of a transactional id.
func EncodeKey(transactionalID string) []byte {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: transactionalID}
	return k.AppendTo(nil)
}

// EncodeValue returns the record value of t (nil, a tombstone, for Dead).
func EncodeValue(t *Txn) []byte {
	if t.State == Dead {
		return nil
	}
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID = t.ProducerID
	v.ProducerEpoch = t.ProducerEpoch
	v.TimeoutMillis = t.TimeoutMs
	v.State = t.State.kmsgState()
	v.LastUpdateTimestamp = t.LastUpdate
	v.StartTimestamp = t.StartTime
	// Kafka writes a null partition list for Empty.
	if t.State != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, tp := range t.Partitions {
			if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.Topic {
				v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
			}
			last := &v.Topics[len(v.Topics)-1]
			last.Partitions = append(last.Partitions, tp.Partition)
		}
	}
	return v.AppendTo(nil)
}

// DecodeKey returns the transactional id of a record key.
func DecodeKey(b []byte) (id string, err error) {
	if len(b) < 2 {
		return "", fmt.Errorf("key of %d bytes: %w", len(b), ErrMalformed)
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != keyVersion {
		return "", fmt.Errorf("unknown key version %d: %w", v, ErrMalformed)
	}
	var k kmsg.TxnMetadataKey
	if err := safeRead(func() error { return k.ReadFrom(b) }); err != nil {
		return "", fmt.Errorf("transaction metadata key: %v: %w", err, ErrMalformed)
	}
	if k.TransactionalID == "" {
		return "", fmt.Errorf("empty transactional id: %w", ErrMalformed)
	}
	return k.TransactionalID, nil
}

// DecodeValue returns the metadata of transactional id id from a record
// value. A value of state Dead decodes as such (the caller removes the id);
// PrepareEpochFence, which Kafka never writes, and unknown states are
// malformed.
func DecodeValue(id string, b []byte) (*Txn, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("value of %d bytes: %w", len(b), ErrMalformed)
	}
	if v := int16(binary.BigEndian.Uint16(b)); v < 0 || v > maxValueVersion {
		return nil, fmt.Errorf("unknown value version %d: %w", v, ErrMalformed)
	}
	var v kmsg.TxnMetadataValue
	if err := safeRead(func() error { return v.ReadFrom(b) }); err != nil {
		return nil, fmt.Errorf("transaction metadata value: %v: %w", err, ErrMalformed)
	}
	st := State(v.State)
	if st < Empty || st > Dead {
		return nil, fmt.Errorf("transactional id %q: state %d: %w", id, v.State, ErrMalformed)
	}
	if v.ProducerID < 0 || v.ProducerEpoch < NoProducerEpoch || v.TimeoutMillis <= 0 {
		return nil, fmt.Errorf("transactional id %q: producer %d epoch %d timeout %d: %w",
			id, v.ProducerID, v.ProducerEpoch, v.TimeoutMillis, ErrMalformed)
	}
	t := &Txn{
		ID:                id,
		ProducerID:        v.ProducerID,
		ProducerEpoch:     v.ProducerEpoch,
		LastProducerID:    NoProducerID,
		LastProducerEpoch: NoProducerEpoch,
		TimeoutMs:         v.TimeoutMillis,
		State:             st,
		StartTime:         v.StartTimestamp,
		LastUpdate:        v.LastUpdateTimestamp,
	}
	if v.Version >= 1 && v.PreviousProducerID >= 0 {
		t.LastProducerID = v.PreviousProducerID
	}
	if st == Ongoing || st.Prepared() {
		for _, vt := range v.Topics {
			for _, p := range vt.Partitions {
				if vt.Topic == "" || p < 0 {
					return nil, fmt.Errorf("transactional id %q: partition %q/%d: %w", id, vt.Topic, p, ErrMalformed)
				}
				t.Partitions = append(t.Partitions, storage.TopicPartition{Topic: vt.Topic, Partition: p})
			}
		}
		t.Partitions = sortedPartitions(t.Partitions)
	}
	return t, nil
}

// safeRead runs a kmsg decoder, turning a panic into an error: the bytes
// come from disk or from another node and must never crash the broker.
func safeRead(read func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	return read()
}
