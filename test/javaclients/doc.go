// Package javaclients runs Apache Kafka 4.4.0's Java clients and Kafka
// Streams against a three-node kmirror cluster whose nodes are child
// processes, kills a broker with SIGKILL while they run, restarts it, and
// checks Kafka's guarantees from what the programs print and what the
// topics hold: an idempotent producer's acknowledged records are in the
// log exactly once, a transactional consume-transform-produce loop copies
// its committed input exactly once, a read_committed consumer in a classic
// group (cooperative sticky assignor, static membership) reads every
// committed record once and no aborted one, the Admin client describes
// the cluster as it is, and a Kafka Streams word count with
// exactly_once_v2 counts every word exactly once, across the broker's
// death and its own.
//
// The Java programs are in test/kafka/src/main/java; the tests compile
// them with javac against the release jars (kafkacluster.Libs) into a
// temporary directory. They need a JDK 17, which scripts/test.sh
// installs.
package javaclients
