//go:build race

package testcluster

// raceEnabled says the test binary runs with the race detector: the child
// binaries are built with it too.
const raceEnabled = true
