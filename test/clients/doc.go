// Package clients holds kmirror's external-client tests: unmodified Kafka
// clients written by others — kcat (librdkafka), kafka-python and kafkajs —
// produce to and consume from an in-process kmirror node, and franz-go checks
// what they wrote. A missing tool fails its test with the command that
// installs it (make test), so no client is skipped silently.
package clients
