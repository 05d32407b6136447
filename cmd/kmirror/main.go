// Command kmirror is the kmirror broker and the command-line tools that talk to
// any Kafka-compatible cluster.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
