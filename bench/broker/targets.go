package main

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"
)

// target is a broker under measurement. Each run starts a fresh one (an
// external broker is reused as it is) so that no run inherits another's data.
type target interface {
	// bootstrap is the client bootstrap address list.
	bootstrap() string
	// close stops the broker and removes its data.
	close() error
}

// kfakeTarget is franz-go's in-memory fake cluster, one broker.
type kfakeTarget struct{ c *kfake.Cluster }

func startKfake(opts ...kfake.Opt) (target, error) {
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("start kfake: %w", err)
	}
	return kfakeTarget{c}, nil
}

func (k kfakeTarget) bootstrap() string { return strings.Join(k.c.ListenAddrs(), ",") }
func (k kfakeTarget) close() error      { k.c.Close(); return nil }

// externalTarget is a broker someone else started (for instance `kmirror
// server` in another shell); the benchmark only connects to it.
type externalTarget struct{ addr string }

func (e externalTarget) bootstrap() string { return e.addr }
func (e externalTarget) close() error      { return nil }
