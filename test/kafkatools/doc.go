// Package kafkatools runs Apache Kafka's own command-line tools, from the
// Kafka 4.4.0 release jars (internal/testcluster/kafkacluster), against a
// three-node kmirror cluster, and checks what they print: an operator's
// hands know kafka-topics.sh and its kin, and they must work against
// kmirror unchanged. docs/operations.md has the table of tools.
package kafkatools
