package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
)

// sourceTopic is what AddTopicsToMirror learns about a topic from the
// mirror's source cluster.
type sourceTopic struct {
	// ID is the topic's id on the source; a mirrored topic keeps it.
	ID metadata.Uuid
	// Partitions is the source's partition count.
	Partitions int32
	// Configs are the topic's own configs on the source (its overrides, not
	// the source brokers' defaults), unfiltered.
	Configs map[string]string
	// Err is the source's answer for the topic when it is not usable, e.g.
	// kerr.UnknownTopicOrPartition.
	Err error
}

// sourceQuerier asks a mirror's source cluster (props are the mirror's
// properties) about topics. The controller's is querySource; tests replace
// it to count or fail queries.
type sourceQuerier func(ctx context.Context, props map[string]string, topics []string) (map[string]sourceTopic, error)

// Bounds of a source query: the request's timeout, within these.
const (
	minSourceQueryTimeout     = time.Second
	defaultSourceQueryTimeout = 30 * time.Second
	maxSourceQueryTimeout     = 2 * time.Minute
)

// sourceQueryTimeout turns a request's timeout_ms into the time a source
// query may take.
func sourceQueryTimeout(timeoutMillis int32) time.Duration {
	if timeoutMillis <= 0 {
		return defaultSourceQueryTimeout
	}
	return min(max(time.Duration(timeoutMillis)*time.Millisecond, minSourceQueryTimeout), maxSourceQueryTimeout)
}

// querySource asks the source cluster, with a franz-go client built from
// the mirror's properties, for each topic's id and partition count
// (Metadata, never creating topics) and for the configs set on it
// (DescribeConfigs). The client lives for this query only. A topic the
// source lacks gets Err; an error return means the source did not answer
// (unreachable, or an error that concerns the whole request).
func querySource(ctx context.Context, props map[string]string, topics []string) (map[string]sourceTopic, error) {
	opts, err := mirrorconfig.SourceClientOpts(props)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("source client: %w", err)
	}
	defer cl.Close()

	mreq := kmsg.NewPtrMetadataRequest()
	mreq.AllowAutoTopicCreation = false
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		mreq.Topics = append(mreq.Topics, rt)
	}
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("metadata from the source cluster: %w", err)
	}
	out := make(map[string]sourceTopic, len(topics))
	var existing []string
	for _, t := range mresp.Topics {
		if t.Topic == nil {
			continue
		}
		st := sourceTopic{ID: metadata.Uuid(t.TopicID), Partitions: int32(len(t.Partitions))}
		if t.ErrorCode != 0 {
			st.Err = kerr.ErrorForCode(t.ErrorCode)
		} else {
			existing = append(existing, *t.Topic)
		}
		out[*t.Topic] = st
	}
	for _, t := range topics {
		if _, ok := out[t]; !ok {
			out[t] = sourceTopic{Err: kerr.UnknownTopicOrPartition}
		}
	}
	if len(existing) == 0 {
		return out, nil
	}

	dreq := kmsg.NewPtrDescribeConfigsRequest()
	for _, t := range existing {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, t
		dreq.Resources = append(dreq.Resources, r)
	}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("topic configs from the source cluster: %w", err)
	}
	for _, r := range dresp.Resources {
		st, ok := out[r.ResourceName]
		if !ok || st.Err != nil {
			continue
		}
		if r.ErrorCode != 0 {
			st.Err = kerr.ErrorForCode(r.ErrorCode)
			if r.ErrorMessage != nil {
				st.Err = fmt.Errorf("%s: %w", *r.ErrorMessage, st.Err)
			}
			out[r.ResourceName] = st
			continue
		}
		st.Configs = map[string]string{}
		for _, c := range r.Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil && !c.IsSensitive {
				st.Configs[c.Name] = *c.Value
			}
		}
		out[r.ResourceName] = st
	}
	return out, nil
}

// sourceQueryError turns a failed source query into the error of the
// topics that needed it: the source's own Kafka error when it gave one,
// REQUEST_TIMED_OUT when the query ran out of time, else
// NETWORK_EXCEPTION (the source could not be reached), all retriable.
func sourceQueryError(mirror string, err error) error {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return errf(ke, "querying the source cluster of mirror %q: %v", mirror, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return errf(kerr.RequestTimedOut, "the source cluster of mirror %q did not answer in time: %v", mirror, err)
	}
	return errf(kerr.NetworkException, "the source cluster of mirror %q could not be reached: %v", mirror, err)
}
