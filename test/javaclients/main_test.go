package javaclients

import (
	"os"
	"testing"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestMain builds the kmirror binary once for every test of the package
// and removes the compiled Java programs afterwards.
func TestMain(m *testing.M) {
	code := testcluster.Main(m)
	removeClasses()
	os.Exit(code)
}
