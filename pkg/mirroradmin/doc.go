// Package mirroradmin is a Go client for kmirror's mirror admin API, in the
// style of franz-go's kadm: a Client wraps a *kgo.Client and offers one
// method per operation with typed results.
//
// A mirror is a named link from this (the destination) cluster to a source
// cluster. Topics join a mirror with AddTopics: they become read-only
// copies of the source's topics, with the same offsets, topic ids and
// configs. PauseTopics and ResumeTopics stop and restart the copying;
// RemoveTopics (alias Failover) makes the topics writable on this cluster
// at a clean point; DeleteMirror removes a mirror whose topics all failed
// over.
//
// The mirror APIs are kmirror's own Kafka API keys (94 to 104). A franz-go
// client sends only the keys of its version table, so the *kgo.Client
// must be built with ClientOpts (or use NewFromAddrs):
//
//	cl, err := kgo.NewClient(append(mirroradmin.ClientOpts(), kgo.SeedBrokers("localhost:9092"))...)
//	adm := mirroradmin.NewClient(cl)
//	err = adm.CreateMirror(ctx, "east", map[string]string{"bootstrap.servers": "east-1:9092"})
//	results, err := adm.AddTopics(ctx, "east", "orders", "payments")
//
// Errors from the cluster are *Error values, which wrap the Kafka error
// (errors.Is(err, kerr.InvalidRequest) works) and carry the broker's
// message, e.g. `topic "orders" is PAUSED; only MIRRORING topics can be
// paused`.
package mirroradmin
