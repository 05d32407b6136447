package main

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The __transaction_state decoder (Kafka's --transaction-log-decoder): a
// key is a transactional id, a value the transaction's metadata (producer
// id and epoch, timeout, state, partitions, timestamps). They print as
// one-line JSON; a record that does not decode prints the reason and its
// bytes.

// txnKeyJSON is a transaction state key as printed.
type txnKeyJSON struct {
	Type            string `json:"type"`
	Version         int16  `json:"version"`
	TransactionalID string `json:"transactionalId"`
}

// txnValueJSON is a transaction state value as printed.
type txnValueJSON struct {
	Version             int16          `json:"version"`
	ProducerID          int64          `json:"producerId"`
	ProducerEpoch       int16          `json:"producerEpoch"`
	PreviousProducerID  int64          `json:"previousProducerId"`
	NextProducerID      int64          `json:"nextProducerId"`
	TimeoutMs           int32          `json:"transactionTimeoutMs"`
	State               string         `json:"state"`
	Partitions          []txnTopicJSON `json:"topicPartitions"`
	LastUpdateTimestamp int64          `json:"transactionLastUpdateTimestampMs"`
	StartTimestamp      int64          `json:"transactionStartTimestampMs"`
}

// txnTopicJSON is one topic's partitions of a transaction.
type txnTopicJSON struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// txnStateNames are Kafka's names of the transaction states a value
// stores (TransactionState's ids).
var txnStateNames = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func txnStateName(s int8) string {
	if s >= 0 && int(s) < len(txnStateNames) {
		return txnStateNames[s]
	}
	return fmt.Sprintf("Unknown(%d)", s)
}

// txnText decodes a __transaction_state record.
func txnText(key, value []byte) string {
	v, err := keyVersion(key)
	if err == nil && v != 0 {
		err = fmt.Errorf("unknown key version %d", v)
	}
	var k kmsg.TxnMetadataKey
	if err == nil {
		err = decodeSafely(func() error { return k.ReadFrom(key) })
	}
	if err != nil {
		return "key: " + undecodable(key, err)
	}
	out := "key: " + jsonText(txnKeyJSON{"transaction_metadata", k.Version, k.TransactionalID})
	if value == nil {
		return out + " payload: <DELETE>"
	}
	return out + " payload: " + txnValueText(value)
}

func txnValueText(b []byte) string {
	ver, err := keyVersion(b)
	if err == nil && (ver < 0 || ver > 1) {
		err = fmt.Errorf("unknown value version %d", ver)
	}
	var v kmsg.TxnMetadataValue
	if err == nil {
		err = decodeSafely(func() error { return v.ReadFrom(b) })
	}
	if err != nil {
		return undecodable(b, err)
	}
	out := txnValueJSON{Version: v.Version, ProducerID: v.ProducerID, ProducerEpoch: v.ProducerEpoch,
		PreviousProducerID: -1, NextProducerID: -1, TimeoutMs: v.TimeoutMillis, State: txnStateName(int8(v.State)),
		Partitions: []txnTopicJSON{}, LastUpdateTimestamp: v.LastUpdateTimestamp, StartTimestamp: v.StartTimestamp}
	if v.Version >= 1 {
		out.PreviousProducerID, out.NextProducerID = v.PreviousProducerID, v.NextProducerID
	}
	for _, t := range v.Topics {
		ps := t.Partitions
		if ps == nil {
			ps = []int32{}
		}
		out.Partitions = append(out.Partitions, txnTopicJSON{t.Topic, ps})
	}
	return jsonText(out)
}
