// Command kmirror is the kmirror broker and the command-line tools that talk to
// any Kafka-compatible cluster.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:]))
}

// run executes the command line and returns the process exit status: 0 on
// success, 1 on an error (printed to stderr). `kmirror server` exits 130 or
// 143 by itself on a second SIGINT or SIGTERM.
func run(ctx context.Context, args []string) int {
	rootCmd.SetArgs(args)
	if err := rootCmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}
