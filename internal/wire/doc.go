// Package wire is kmirror's Kafka wire layer: size-prefixed framing, request
// and response headers, the registry of served API keys and versions (what
// ApiVersions advertises), the mapping of Go errors to Kafka error codes, a
// minimal client connection for inter-node RPCs, and the message types that
// franz-go's kmsg does not have: the mirror APIs, keys 9000 to 9010.
//
// Standard Kafka messages are kmsg types. The mirror APIs live on keys no
// Kafka release uses (see mirror_keys.go), and Registry.NewRequest returns
// this package's types for them. A peer's support for them is the
// MirrorFeature it advertises in ApiVersions.
//
// Decoding never panics on untrusted bytes and never allocates more than a
// small multiple of the bytes it was given: every length read from the wire is
// checked against the bytes that remain before anything is allocated for it.
package wire
