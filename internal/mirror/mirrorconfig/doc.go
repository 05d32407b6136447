// Package mirrorconfig is the configuration of a cluster mirror: the
// properties a CreateMirror request may carry (Kafka client property names
// for the connection to the source cluster, plus the mirror's sync options),
// their validation, which of them are secrets, and the franz-go options of a
// client to the source built from them.
//
// Both the controller (which validates and stores a mirror's properties, and
// queries the source when topics are added) and the mirror data plane (which
// fetches from the source) use it, so it sits low: it imports only franz-go,
// internal/config and internal/auth (for Kafka's JAAS syntax and the ACL
// binding whose synced id it derives).
//
// Invariants:
//   - A stored mirror configuration passed Validate: every key is in the
//     table, every value parses, bootstrap.servers is set, and the security
//     properties fit together (a SASL protocol has a mechanism and a login,
//     TLS files are PEM). The files themselves are read when a client is
//     built, on the node that connects.
//   - A sensitive value (Sensitive in the table) never leaves the node that
//     stores it except towards the source cluster: Describe reports it as
//     null, Redact as "[hidden]", and errors about it never quote it.
package mirrorconfig
