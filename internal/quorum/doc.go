// Package quorum is the metadata log: a hashicorp/raft log whose entries are
// batches of metadata records (one metadata.EncodeBatch per entry), applied
// on every node to an immutable metadata.Image and handed to publishers.
//
// Controllers are raft voters, from the static controller.quorum.voters set
// that every voter bootstraps with when it has no state; broker-only nodes
// are non-voters that the leader adds and that replicate and apply the log
// too. Raft server ids are node ids in decimal.
//
// On disk, under <dir>/__cluster_metadata-0/: raft.db (raft-boltdb: the log
// and raft's term/vote state) and snapshots/ (raft's file snapshot store,
// each snapshot the image's records; see snapshot.go for the format).
//
// Raft traffic shares the node's TCP listener with Kafka traffic: outgoing
// raft connections start with a preamble whose first 4 bytes read as a
// negative Kafka frame size, so the server sniffs 4 bytes and passes raft
// connections to StreamLayer.Handoff. Without a stream layer the quorum
// listens on an address of its own.
//
// docs/metadata.md describes the records, the replay rules and the layout.
package quorum
