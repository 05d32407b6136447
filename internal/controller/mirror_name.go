package controller

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
)

// SetMirrorNames sets the mirror.name config of topics (name → value, ""
// to remove it) in one atomic metadata entry. It is the only way to change
// mirror.name: AlterConfigs and IncrementalAlterConfigs refuse it, because
// a topic's mirror membership makes it read-only and decides who writes to
// it. The mirror admin calls it on the active controller.
//
// Every topic must exist (an error wrapping kerr.UnknownTopicOrPartition
// otherwise, and nothing changes); a controller that is not active returns
// an error wrapping kerr.NotController.
func (c *Controller) SetMirrorNames(ctx context.Context, names map[string]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.decide(func(v *view) error {
		recs, err := decideSetMirrorNames(v.img, names)
		if err != nil || len(recs) == 0 {
			return err
		}
		if _, err := c.propose(recs); err != nil {
			return proposeError(err)
		}
		for _, t := range slices.Sorted(maps.Keys(names)) {
			c.log.Info("mirror.name changed", "topic", t, "mirror", names[t])
		}
		return nil
	})
}

// decideSetMirrorNames returns the ConfigRecords that set (or, for "",
// remove) mirror.name on each topic, by topic name; values that do not
// change emit nothing.
func decideSetMirrorNames(img *metadata.Image, names map[string]string) ([]metadata.Record, error) {
	var recs []metadata.Record
	for _, t := range slices.Sorted(maps.Keys(names)) {
		if _, ok := img.Topic(t); !ok {
			return nil, errf(kerr.UnknownTopicOrPartition, "Topic '%s' does not exist.", t)
		}
		res := metadata.ConfigResource{Type: metadata.ResourceTopic, Name: t}
		old, had := img.Config(res, config.MirrorNameConfig)
		switch v := names[t]; {
		case v == "" && had:
			recs = append(recs, metadata.RemoveConfig(res, config.MirrorNameConfig))
		case v != "" && (!had || old != v):
			recs = append(recs, metadata.SetConfig(res, config.MirrorNameConfig, v))
		}
	}
	return recs, nil
}
