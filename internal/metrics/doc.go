// Package metrics is a node's operability endpoint: one HTTP listener
// (metrics.listener, default localhost:9644) that serves
//
//   - /metrics: the node's Prometheus registry in the text exposition
//     format (Go runtime and process collectors, plus the collectors each
//     instrumented package provides in its metrics.go);
//   - /healthz: 200 as long as the process serves HTTP at all (liveness);
//   - /readyz: 200 only when the node is ready for traffic, else 503 with
//     the reason in the body (readiness).
//
// The package knows nothing of kmirror's parts: internal/server registers
// their collectors on the Registry and gives the Server a readiness check.
// docs/metrics.md lists every metric.
package metrics
