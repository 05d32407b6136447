package mirror

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
)

// The topic syncs: configs and partition counts of the mirrored topics,
// written through the controller like an operator's changes.

// configChange is one topic's config change: name → new value, nil to
// remove.
type configChange map[string]*string

// topicConfigChanges decides what makes a destination topic's configs
// match the source's: every managed config (mirrorconfig.ManagedTopicConfig)
// the source sets with a value this cluster accepts is set to it; every
// managed config the destination sets and the source does not is removed.
// Never-synced and unknown configs are left alone, and so is a config whose
// source value this cluster refuses.
func topicConfigChanges(src, dest map[string]string) configChange {
	kept, _ := mirrorconfig.TopicConfigsToSync(src)
	ch := configChange{}
	for name, v := range kept {
		if cur, ok := dest[name]; !ok || cur != v {
			ch[name] = &v
		}
	}
	for name := range dest {
		if _, onSource := src[name]; !onSource && mirrorconfig.ManagedTopicConfig(name) {
			ch[name] = nil
		}
	}
	return ch
}

// syncConfigs copies the mirrored topics' configs from the source.
func (s *mirrorSync) syncConfigs(ctx context.Context, rd syncRound) error {
	if len(rd.topics) == 0 {
		return nil
	}
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	for _, t := range rd.topics {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, t
		dreq.Resources = append(dreq.Resources, r)
	}
	dresp, err := dreq.RequestWith(ctx, rd.cl)
	if err != nil {
		return fmt.Errorf("topic configs from the source: %w", err)
	}
	var errs []error
	areq := kmsg.NewPtrIncrementalAlterConfigsRequest()
	changed := map[string][]string{}
	for _, r := range dresp.Resources {
		if !slices.Contains(rd.topics, r.ResourceName) {
			continue
		}
		if r.ErrorCode != 0 {
			// A topic missing on the source fails its partitions; that is
			// where it is reported.
			if r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				errs = append(errs, fmt.Errorf("configs of %q on the source: %w", r.ResourceName, kerr.ErrorForCode(r.ErrorCode)))
			}
			continue
		}
		src := map[string]string{}
		for _, c := range r.Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil && !c.IsSensitive {
				src[c.Name] = *c.Value
			}
		}
		dest := rd.img.Configs(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: r.ResourceName})
		ch := topicConfigChanges(src, dest)
		if len(ch) == 0 {
			continue
		}
		ar := kmsg.NewIncrementalAlterConfigsRequestResource()
		ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, r.ResourceName
		for _, name := range slices.Sorted(maps.Keys(ch)) {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value, c.Op = name, ch[name], kmsg.IncrementalAlterConfigOpSet
			if ch[name] == nil {
				c.Op = kmsg.IncrementalAlterConfigOpDelete
			}
			ar.Configs = append(ar.Configs, c)
			changed[r.ResourceName] = append(changed[r.ResourceName], name)
		}
		areq.Resources = append(areq.Resources, ar)
	}
	if len(areq.Resources) > 0 {
		resp, err := s.r.m.deps.Sync.Controller.SendForMirror(ctx, s.name, areq)
		if err != nil {
			return fmt.Errorf("write topic configs: %w", err)
		}
		ar, ok := resp.(*kmsg.IncrementalAlterConfigsResponse)
		if !ok {
			return fmt.Errorf("write topic configs: unexpected answer %T", resp)
		}
		for _, x := range ar.Resources {
			if x.ErrorCode != 0 {
				errs = append(errs, fmt.Errorf("write configs of %q: %s: %w", x.ResourceName, syncText(x.ErrorMessage), kerr.ErrorForCode(x.ErrorCode)))
				continue
			}
			s.log.Info("topic configs synced from the source", "topic", x.ResourceName, "configs", changed[x.ResourceName])
		}
	}
	return errJoin(errs)
}

// syncPartitions adds to the mirrored topics the partitions the source
// added; the new partitions are mirrored like the others (their topic's
// mirror.name covers them).
func (s *mirrorSync) syncPartitions(ctx context.Context, rd syncRound) error {
	if len(rd.topics) == 0 {
		return nil
	}
	md, err := sourceMetadata(ctx, rd.cl, rd.topics)
	if err != nil {
		return err
	}
	var errs []error
	creq := kmsg.NewPtrCreatePartitionsRequest()
	creq.TimeoutMillis = int32(s.r.m.cfg.RequestTimeout.Milliseconds())
	for _, name := range rd.topics {
		st, ok := md.topics[name]
		dest, found := rd.img.Topic(name)
		if !ok || st.err != 0 || !found || metadata.Uuid(st.id) != dest.ID {
			continue // the partitions' drivers report a topic missing or recreated on the source
		}
		have, want := int32(len(dest.Partitions)), int32(len(st.parts))
		switch {
		case want > have:
			ct := kmsg.NewCreatePartitionsRequestTopic()
			ct.Topic, ct.Count = name, want
			creq.Topics = append(creq.Topics, ct)
		case want < have:
			errs = append(errs, fmt.Errorf("topic %q has %d partitions on the source and %d here; partitions cannot be removed", name, want, have))
		}
	}
	if len(creq.Topics) > 0 {
		resp, err := s.r.m.deps.Sync.Controller.SendForMirror(ctx, s.name, creq)
		if err != nil {
			return fmt.Errorf("create partitions: %w", err)
		}
		cr, ok := resp.(*kmsg.CreatePartitionsResponse)
		if !ok {
			return fmt.Errorf("create partitions: unexpected answer %T", resp)
		}
		for i, x := range cr.Topics {
			switch {
			case x.ErrorCode == kerr.InvalidPartitions.Code && i < len(creq.Topics) && alreadyHas(s.r.m.image(), x.Topic, creq.Topics[i].Count):
				// Added meanwhile (a previous owner's round).
			case x.ErrorCode != 0:
				errs = append(errs, fmt.Errorf("add partitions to %q: %s: %w", x.Topic, syncText(x.ErrorMessage), kerr.ErrorForCode(x.ErrorCode)))
			default:
				s.log.Info("partitions added from the source", "topic", x.Topic, "partitions", creq.Topics[i].Count)
			}
		}
	}
	return errJoin(errs)
}

// alreadyHas reports whether topic has at least n partitions in img.
func alreadyHas(img *metadata.Image, topic string, n int32) bool {
	t, ok := img.Topic(topic)
	return ok && int32(len(t.Partitions)) >= n
}
