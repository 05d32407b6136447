// Package mirrorstate defines the records of the internal topic
// __mirror_state, where cluster mirroring keeps its durable state, and which
// partition of the topic holds each record.
//
// Two kinds of records live there:
//
//   - MirrorPartitionState, keyed by (mirror, topic id, partition): the mirror
//     state machine's persisted state of one mirrored partition on the
//     destination cluster (state, state epoch, the leader epoch of its
//     writer, the source cluster whose data the log holds, the last error).
//   - LastMirroredEpochs, keyed by (topic id, partition): written when a
//     mirrored partition fails over (STOPPING), the greatest leader epoch of
//     the source cluster that this cluster's copy holds and where it ends.
//     A later mirror in the opposite direction asks for it with
//     ReadLastMirroredEpochs to know how much of its own log the failed-over
//     copy agrees with.
//
// The format is kmirror's own, versioned like Kafka's coordinator records:
// a key starts with an int16 record type and is never extended (compaction
// compares key bytes); a value starts with an int16 version and ends with a
// tagged-field section, so that later versions can add fields. Strings are
// compact strings (unsigned varint length + 1). A nil value is a tombstone.
// The decoders take untrusted bytes (a log read from disk) and never panic.
package mirrorstate
