package main

import "github.com/spf13/cobra"

// rootCmd is the kmirror command; every subcommand registers itself on it from
// its file's init function.
var rootCmd = &cobra.Command{
	Use:           "kmirror",
	Short:         "A Kafka-compatible broker with native cluster mirroring",
	SilenceUsage:  true,
	SilenceErrors: true,
}
