// Package auth is kmirror's security layer: TLS for listeners and for the
// node's own connections, SASL authentication (PLAIN with users from the
// listener's JAAS configuration, SCRAM-SHA-256 and SCRAM-SHA-512 with
// credentials from the metadata log), the principal of a connection, and the
// ACL authorizer with Kafka's StandardAuthorizer semantics.
//
// The package holds the decisions, not the plumbing: the server runs the
// TLS handshake and the SASL exchange in its connection loop with the
// mechanisms built here, and handlers reach the authorizer through
// wire.RequestContext (wire defines the Authorizer interface that
// *Authorizer implements, so that it need not import this package).
//
// RequiredFor is Kafka's table of what every API needs (which operation on
// which resource), kept as data so that the server can enforce the checks
// that need no knowledge of the request (APIs whose only resource is the
// cluster) and handlers the rest.
//
// Secrets (passwords, JAAS configurations, private keys, SCRAM salted
// passwords) never appear in errors or logs produced here.
package auth
