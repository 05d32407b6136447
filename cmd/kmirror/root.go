package main

import "github.com/spf13/cobra"

// rootCmd is the kmirror command. Subcommands register themselves on it
// from their files' init functions (rootCmd.AddCommand or addCommand), so
// that each command lives in its own file.
var rootCmd = &cobra.Command{
	Use:   "kmirror",
	Short: "A Kafka-compatible broker with native cluster mirroring",
	Long: `kmirror is a Kafka-compatible broker whose headline feature is native
cluster mirroring: byte-for-byte, offset-preserving replication from another
Kafka cluster, with safe failover.

Run a node with "kmirror server"; talk to any Kafka-compatible cluster with
"kmirror topic", "kmirror produce" and "kmirror consume".`,
	SilenceUsage:  true,
	SilenceErrors: true,
}

// addCommand registers subcommands on the root command.
func addCommand(cmds ...*cobra.Command) {
	rootCmd.AddCommand(cmds...)
}
