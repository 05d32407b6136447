// Package faults holds kmirror's multi-process fault tests: three kmirror
// binaries (built from this module) run as child processes on loopback
// ports, and the tests kill them (SIGKILL), pause them (SIGSTOP/SIGCONT) and
// restart them while franz-go clients produce, consume and run transactions,
// then check Kafka's guarantees from the outside: no acknowledged record is
// lost or duplicated, ISRs shrink and expand, controllers and coordinators
// fail over, unclean elections lose only what Kafka documents, and every
// replica ends byte-identical on disk.
//
// The default run takes a few minutes on two cores; KMIRROR_LONG=1 runs
// more kills and a longer randomized fault run, and KMIRROR_FAULT_SEED
// replays a randomized run.
package faults
