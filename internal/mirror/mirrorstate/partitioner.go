package mirrorstate

import "encoding/binary"

// PartitionFor returns the partition of __mirror_state holding the state of
// a mirrored partition: hash(mirror, topicID, partition) % partitions, where
// hash is 32-bit FNV-1a over the mirror name's UTF-8 bytes, then the 16 bytes
// of the topic id, then the partition as 4 big-endian bytes, read as an
// unsigned number. Every kmirror broker must agree on it: it is part of the
// format (docs/mirroring.md documents it). partitions <= 0 yields 0.
func PartitionFor(mirror string, topicID [16]byte, partition int32, partitions int32) int32 {
	if partitions <= 0 {
		return 0
	}
	h := uint32(fnvOffset)
	for i := 0; i < len(mirror); i++ {
		h = (h ^ uint32(mirror[i])) * fnvPrime
	}
	for _, c := range topicID {
		h = (h ^ uint32(c)) * fnvPrime
	}
	var p [4]byte
	binary.BigEndian.PutUint32(p[:], uint32(partition))
	for _, c := range p {
		h = (h ^ uint32(c)) * fnvPrime
	}
	return int32(h % uint32(partitions))
}

// LMEPartitionFor returns the partition of __mirror_state holding the Last
// Mirrored Epoch of a partition: PartitionFor with an empty mirror name,
// since whoever asks (another cluster) does not know this cluster's mirror
// names.
func LMEPartitionFor(topicID [16]byte, partition int32, partitions int32) int32 {
	return PartitionFor("", topicID, partition, partitions)
}

const (
	fnvOffset = 2166136261
	fnvPrime  = 16777619
)
