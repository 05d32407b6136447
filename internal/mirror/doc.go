// Package mirror is kmirror's cluster mirroring data plane: a destination
// cluster copies topics from a source cluster inside its brokers, batch for
// batch at the same offsets, and can fail over (make them writable) safely.
//
// The parts, each in its own files:
//
//   - the mirror coordinator (coordinator*.go, api_*.go): the third user of
//     internal/coordinator, on the compacted topic __mirror_state. It keeps
//     every mirrored partition's persisted state and the Last Mirrored Epochs
//     of partitions that failed over, and serves ReadMirrorStates (100) and
//     WriteMirrorStates (101) to this cluster's brokers and
//     ReadLastMirroredEpochs (104) to other clusters.
//   - the state store (store.go): how a partition's leader reaches the
//     coordinator of its key, in process or over the inter-broker listener.
//   - the partition state machine (machine.go): pure, table-tested.
//   - the manager (manager.go, driver.go, ...): a metadata publisher on every
//     broker that drives the machine of each mirrored partition this broker
//     leads, with one franz-go client per mirror to its source cluster and
//     one replication.Manager of mirror fetchers per mirror.
//   - DescribeMirrors (99), answered by any broker.
//
// docs/mirroring.md describes the behaviour; docs/protocol.md the wire
// schemas; package mirrorstate the records of __mirror_state.
package mirror
