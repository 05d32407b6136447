// Package wire is kmirror's Kafka wire layer: size-prefixed framing, request
// and response headers, the registry of served API keys and versions (what
// ApiVersions advertises), the mapping of Go errors to Kafka error codes, a
// minimal client connection for inter-node RPCs, and the message types that
// franz-go's kmsg does not have: the mirror APIs, keys 94 to 104.
//
// Standard Kafka messages are kmsg types. kmsg's key 94 is
// UnregisterController, which kmirror does not serve: in kmirror keys 94 to
// 104 are the mirror APIs, and Registry.NewRequest returns this package's
// types for them.
//
// Decoding never panics on untrusted bytes and never allocates more than a
// small multiple of the bytes it was given: every length read from the wire is
// checked against the bytes that remain before anything is allocated for it.
package wire
