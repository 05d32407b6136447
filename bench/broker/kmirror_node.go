package main

import (
	"errors"
	"log/slog"
)

// startKmirror starts an in-process single-node kmirror with its data in dir.
// The node assembly (internal/server) is not in the tree yet; until it is, a
// kmirror can be measured with -kmirror-addr.
func startKmirror(dir string, logger *slog.Logger) (target, error) {
	_, _ = dir, logger
	return nil, errors.New("in-process kmirror needs internal/server, not built yet: " +
		"start `kmirror server` and pass -kmirror-addr, or use -targets kfake,raw")
}
