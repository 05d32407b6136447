package record

import "encoding/binary"

// SetBaseOffset rewrites the batch's base offset in place, as a leader does
// when it assigns offsets. The CRC does not cover the field, so it stays
// valid. batch must hold at least a header.
func SetBaseOffset(batch []byte, off int64) {
	binary.BigEndian.PutUint64(batch[BaseOffsetPos:], uint64(off))
}

// SetPartitionLeaderEpoch rewrites the batch's partition leader epoch in
// place, as a leader does on append. The CRC does not cover the field.
// batch must hold at least a header.
func SetPartitionLeaderEpoch(batch []byte, epoch int32) {
	binary.BigEndian.PutUint32(batch[PartitionLeaderEpochPos:], uint32(epoch))
}

// SetLogAppendTime marks the batch's timestamps as LogAppendTime, sets its
// max timestamp to ts and recomputes the CRC, as a leader does for a topic
// with message.timestamp.type=LogAppendTime. batch must be exactly one batch.
func SetLogAppendTime(batch []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(batch[AttributesPos:]) | timestampTypeBit
	binary.BigEndian.PutUint16(batch[AttributesPos:], attrs)
	binary.BigEndian.PutUint64(batch[MaxTimestampPos:], uint64(ts))
	putCRC(batch)
}
