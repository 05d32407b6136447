package metadata

// ProducerIdsRecord records that the controller handed the producer-id block
// ending just below NextProducerID to a broker. The image keeps only the next
// id to hand out; ids below it are never handed out again.
type ProducerIdsRecord struct {
	BrokerID       int32 // -1 when written by Image.ToRecords
	BrokerEpoch    int64 // -1 when written by Image.ToRecords
	NextProducerID int64
}

// Type implements Record.
func (*ProducerIdsRecord) Type() RecordType { return TypeProducerIds }

// Version implements Record.
func (*ProducerIdsRecord) Version() int16 { return 0 }

func (x *ProducerIdsRecord) appendFields(b []byte) []byte {
	b = appendInt32(b, x.BrokerID)
	b = appendInt64(b, x.BrokerEpoch)
	b = appendInt64(b, x.NextProducerID)
	return appendTags(b)
}

func (x *ProducerIdsRecord) readFields(r *reader, _ int16) {
	x.BrokerID = r.int32("BrokerId")
	x.BrokerEpoch = r.int64("BrokerEpoch")
	x.NextProducerID = r.int64("NextProducerId")
	r.tags("ProducerIdsRecord", nil)
}
