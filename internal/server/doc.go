// Package server assembles a kmirror node: it owns the node's listeners and
// client connections, routes each request to the service that serves its API
// key (the broker's APIs on client listeners, the controller's on the
// controller listener), and runs the node's lifecycle from meta.properties to
// a graceful shutdown.
//
// Start order (Node.Start): meta.properties in every directory → the log
// manager (every partition loaded) → listeners bound → the metadata quorum
// (raft shares the controller listener; see netServer.handle in listener.go) → the
// controller (controller role) → the controller channel → the broker (broker
// role) → broker registration and heartbeats → client requests served.
// Shutdown stops accepting, runs the controlled shutdown, closes
// connections, then stops the broker, the controller and the quorum, and the
// log manager last, so that no metadata update reaches a closed log.
//
// Handlers must not keep references into a request after they return: a
// decoded request aliases its frame buffer, which the connection reuses for
// the request after next.
//
// Connection invariants (conn.go):
//   - One request is processed at a time per connection and responses leave in
//     request order, as in Kafka. At most one further request is read ahead, so
//     a connection holds at most two request frames in memory.
//   - A frame over socket.request.max.bytes, an undecodable header or body, an
//     unknown API key, an unsupported version (except ApiVersions), a handler
//     error or a handler panic closes that connection only, with a log line.
//   - The context a handler gets ends when its connection closes or the node
//     shuts down, so a parked long poll never outlives its client.
package server
