// Package record reads, writes and validates Kafka record batches in message
// format v2 (magic 2), the unit kmirror stores on disk, replicates and serves.
//
// A batch is a 61-byte big-endian header followed by records, which are
// compressed as one stream when the batch's codec is not none. The header's
// CRC-32C covers everything from the attributes field to the end of the batch,
// so the base offset and partition leader epoch can be rewritten in place (by a
// leader assigning offsets, or when the batch moves to a new log) without
// recomputing it. A mirror appends source batches unchanged, which is why this
// package separates cheap structural checks ([ValidateCRC]) from the full walk
// of every record ([ValidateRecords]).
//
// Every function that reads bytes treats them as untrusted: malformed input
// yields an error wrapping [ErrCorrupt] (which is also
// kerr.CorruptMessage), never a panic, and no allocation is sized from a
// length or count field beyond the bytes actually present. Decompression is
// bounded by a caller-supplied limit.
//
// All functions are safe for concurrent use; codec state is pooled
// internally. A batch must not be modified while another goroutine reads it.
package record
