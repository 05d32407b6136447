package faults

import (
	"os"
	"testing"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestMain builds the kmirror binary once for every test of the package.
func TestMain(m *testing.M) { os.Exit(testcluster.Main(m)) }

// long reports whether the long variants run (KMIRROR_LONG=1).
func long() bool { return os.Getenv("KMIRROR_LONG") != "" }
