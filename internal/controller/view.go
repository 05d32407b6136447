package controller

import (
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
)

// view is what a decision reads: the metadata image, this node's static
// configuration, and its sources of randomness. Decisions never change it.
type view struct {
	img   *metadata.Image
	cfg   *config.Config
	rnd   *rand.Rand
	newID func() metadata.Uuid
	// nodeID is the controller's node id, whose per-broker dynamic configs
	// apply to the controller's defaults.
	nodeID int32
}

// active reports whether broker id may hold leadership and join new ISRs:
// registered, unfenced and not in controlled shutdown.
func active(img *metadata.Image, id int32) bool {
	b, ok := img.Broker(id)
	return ok && !b.Fenced && !b.InControlledShutdown
}

// usableBrokers returns the brokers new replicas may be placed on, by id.
func (v *view) usableBrokers() []placementBroker {
	var out []placementBroker
	for _, b := range v.img.Brokers() {
		if !b.Fenced && !b.InControlledShutdown {
			out = append(out, placementBroker{ID: b.ID, Rack: b.Rack})
		}
	}
	return out
}

// effectiveConfig returns the node's configuration with the dynamic broker
// configs stored in the image applied (the cluster-wide defaults and this
// node's own), which is what topic defaults resolve against. Should the
// stored configs not apply (they were validated when written, so only a
// newer node's configs could), the static configuration is used.
func (v *view) effectiveConfig() *config.Config {
	def := v.img.Configs(metadata.ConfigResource{Type: metadata.ResourceBroker, Name: ""})
	own := v.img.Configs(metadata.ConfigResource{Type: metadata.ResourceBroker, Name: strconv.Itoa(int(v.nodeID))})
	if len(def) == 0 && len(own) == 0 {
		return v.cfg
	}
	c, err := v.cfg.WithDynamic(def, own)
	if err != nil {
		return v.cfg
	}
	return c
}

// uncleanElection reports whether topic may elect a leader outside its
// ISR: its own unclean.leader.election.enable, else the cluster-wide
// dynamic default, else the static configuration.
func uncleanElection(img *metadata.Image, cfg *config.Config, topic string) bool {
	const key = "unclean.leader.election.enable"
	if s, ok := img.Config(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: topic}, key); ok {
		return strings.EqualFold(strings.TrimSpace(s), "true")
	}
	if s, ok := img.Config(metadata.ConfigResource{Type: metadata.ResourceBroker, Name: ""}, key); ok {
		return strings.EqualFold(strings.TrimSpace(s), "true")
	}
	return cfg.UncleanLeaderElectionEnable
}
