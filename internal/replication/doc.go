// Package replication copies partition data from a remote broker into local
// replicas: Kafka's replica fetcher. A Manager runs one fetcher goroutine per
// (source broker, fetcher id) — num.replica.fetchers of them per source —
// and each fetcher owns a set of partitions with their fetch state (fetch
// offset, last fetched epoch, fetching / delayed / fenced). A fetcher sends
// Fetch requests (v12+: LastFetchedEpoch and CurrentLeaderEpoch, incremental
// fetch sessions) to an Endpoint and applies every partition's answer to that
// partition's Target:
//
//   - records: append them unchanged (offsets and leader epochs kept), then
//     follow the source's high watermark and log start offset;
//   - a diverging epoch: truncate to where the local log stops agreeing with
//     the source (Kafka's rule, truncate.go) and fetch on;
//   - OFFSET_OUT_OF_RANGE: ask the source for its log range and either
//     truncate to its end (the local log is longer) or restart empty at its
//     start (the local log ends before it);
//   - FENCED_LEADER_EPOCH: the source has moved to a newer leader epoch than
//     the partition was added with; the partition waits until it is added
//     again with the new metadata;
//   - any other error, or a failed request: back off (replica.fetch.backoff.ms)
//     and try again, reconnecting if the connection failed.
//
// Followers of this cluster fetch from their leaders with their node id as
// replica id over a wire.Conn (ConnEndpoint). The cluster mirror (issue 6) is
// the same fetcher pointed at another cluster: consumer Fetch requests
// (replica id -1) through an Endpoint of its own, into a Target that appends
// on the mirror partition's leader, throttled by a RateLimiter
// (mirror.replication.throttled.rate).
//
// Invariants:
//   - A partition belongs to at most one fetcher. RemovePartitions returns
//     only once no fetcher will call that partition's Target again, so that
//     the caller may change the partition's role (make it leader, delete it).
//   - A fetcher holds its lock while it calls Targets and never while it
//     waits on the network, so removals wait at most for one response's
//     processing, never for a long poll.
//   - A response is applied to a partition only if the partition is still
//     the one (same add, same fetch offset) the request was built for.
package replication
