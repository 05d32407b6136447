package coordinator

import "unicode/utf16"

// PartitionFor maps a coordinator key (a group id, a transactional id) to
// its partition of the coordinator's topic the way Kafka does:
// abs(key.hashCode()) % partitions, with Java's String.hashCode over UTF-16
// code units and Kafka's abs (which maps MinInt32 to 0). Clients and other
// brokers rely on every broker agreeing on this.
func PartitionFor(key string, partitions int32) int32 {
	if partitions <= 0 {
		return 0
	}
	return javaAbs(javaStringHash(key)) % partitions
}

// javaStringHash is Java's String.hashCode.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + int32(hi)
			h = 31*h + int32(lo)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// javaAbs is Kafka's Utils.abs: Math.abs except that MinInt32 maps to 0.
func javaAbs(n int32) int32 {
	if n == -1<<31 {
		return 0
	}
	if n < 0 {
		return -n
	}
	return n
}
