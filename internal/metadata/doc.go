// Package metadata holds kmirror's cluster metadata: the versioned binary
// records that the metadata log (package quorum) replicates, the immutable
// Image that the records build, the Delta that moves one Image to the next,
// and the Publisher interface through which the rest of a node learns what
// changed.
//
// The record encoding is Kafka's KRaft metadata record encoding: a frame
// version, the record type (Kafka's api key for metadata records) and the
// record version as unsigned varints, then the fields in Kafka's flexible
// message format (fixed-width integers, compact strings and arrays with
// unsigned-varint lengths, a tagged-field section at the end of every
// structure). Types and field layouts follow Kafka's schemas, so Kafka's
// tooling can name and read our records. docs/metadata.md describes the format
// and the replay rules.
//
// Invariants:
//   - An Image is never modified after it is built; Delta.Apply returns a new
//     Image that shares every unchanged topic, partition map and config map
//     with its base.
//   - Replaying a record either changes the Delta or returns an error and
//     leaves the Delta exactly as it was.
//   - Whether a record is valid depends only on the state it is replayed
//     onto, never on how records were grouped into deltas.
package metadata
