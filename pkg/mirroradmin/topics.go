package mirroradmin

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// TopicID is a topic's id.
type TopicID [16]byte

// String returns the id as Kafka's tools print it: URL-safe base64
// without padding.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// MarshalText makes the id print as String in JSON.
func (id TopicID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads the id as MarshalText writes it.
func (id *TopicID) UnmarshalText(text []byte) error {
	var b [16]byte
	n, err := base64.RawURLEncoding.Decode(b[:], text)
	if err != nil || n != 16 || base64.RawURLEncoding.EncodedLen(16) != len(text) {
		return fmt.Errorf("mirroradmin: %q is not a topic id", text)
	}
	*id = b
	return nil
}

// IsZero reports whether the id is unset (the topic is unknown).
func (id TopicID) IsZero() bool { return id == TopicID{} }

// TopicResult is the outcome of a membership change for one topic.
type TopicResult struct {
	// Topic is the topic's name.
	Topic string
	// ID is the topic's id, zero when the topic is unknown.
	ID TopicID
	// Err is nil on success, else an *Error saying which check failed.
	Err error
}

// TopicResults are the results of a request, one per distinct topic, in
// request order.
type TopicResults []TopicResult

// Error returns the first topic's error, or nil when every topic
// succeeded.
func (rs TopicResults) Error() error {
	for _, r := range rs {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// On returns the result for topic.
func (rs TopicResults) On(topic string) (TopicResult, bool) {
	for _, r := range rs {
		if r.Topic == topic {
			return r, true
		}
	}
	return TopicResult{}, false
}

// AddTopics adds topics to a mirror. A topic this cluster lacks is created
// as a copy of the source's (topic id, partitions, configs); an existing
// one must have the source's topic id. Each topic succeeds or fails on its
// own (see its Err); the error return is for the request as a whole, e.g.
// an unknown mirror (then every result carries it too).
func (c *Client) AddTopics(ctx context.Context, mirror string, topics ...string) (TopicResults, error) {
	return c.topicsOp(ctx, func(r *wire.MirrorTopicsRequest) kmsg.Request { return (*wire.AddTopicsToMirrorRequest)(r) }, mirror, topics)
}

// PauseTopics pauses mirroring of topics (only MIRRORING ones); they stay
// read-only.
func (c *Client) PauseTopics(ctx context.Context, mirror string, topics ...string) (TopicResults, error) {
	return c.topicsOp(ctx, func(r *wire.MirrorTopicsRequest) kmsg.Request { return (*wire.PauseMirrorTopicsRequest)(r) }, mirror, topics)
}

// ResumeTopics resumes paused topics; mirroring continues from where it
// stopped.
func (c *Client) ResumeTopics(ctx context.Context, mirror string, topics ...string) (TopicResults, error) {
	return c.topicsOp(ctx, func(r *wire.MirrorTopicsRequest) kmsg.Request { return (*wire.ResumeMirrorTopicsRequest)(r) }, mirror, topics)
}

// RemoveTopics removes topics (MIRRORING or PAUSED) from their mirror:
// the failover. Each partition stops copying, ends at a transaction-clean
// point and becomes writable; DescribeMirrors shows STOPPED once done.
func (c *Client) RemoveTopics(ctx context.Context, mirror string, topics ...string) (TopicResults, error) {
	return c.topicsOp(ctx, func(r *wire.MirrorTopicsRequest) kmsg.Request { return (*wire.RemoveTopicsFromMirrorRequest)(r) }, mirror, topics)
}

// Failover is RemoveTopics.
func (c *Client) Failover(ctx context.Context, mirror string, topics ...string) (TopicResults, error) {
	return c.RemoveTopics(ctx, mirror, topics...)
}

// topicsOp sends one of the four MirrorTopics requests.
func (c *Client) topicsOp(ctx context.Context, kind func(*wire.MirrorTopicsRequest) kmsg.Request, mirror string, topics []string) (TopicResults, error) {
	if c.missing != nil {
		return nil, c.missing
	}
	if len(topics) == 0 {
		return nil, errors.New("mirroradmin: no topics given")
	}
	body := &wire.MirrorTopicsRequest{MirrorName: mirror, TimeoutMillis: c.timeoutMillis}
	for _, t := range topics {
		body.Topics = append(body.Topics, wire.MirrorTopicsRequestTopic{Name: t})
	}
	resp, err := c.cl.Request(ctx, kind(body))
	if err != nil {
		return nil, err
	}
	return topicResults(resp)
}

// topicResults converts any of the four MirrorTopics responses.
func topicResults(resp kmsg.Response) (TopicResults, error) {
	var r *wire.MirrorTopicsResponse
	switch v := resp.(type) {
	case *wire.AddTopicsToMirrorResponse:
		r = (*wire.MirrorTopicsResponse)(v)
	case *wire.RemoveTopicsFromMirrorResponse:
		r = (*wire.MirrorTopicsResponse)(v)
	case *wire.PauseMirrorTopicsResponse:
		r = (*wire.MirrorTopicsResponse)(v)
	case *wire.ResumeMirrorTopicsResponse:
		r = (*wire.MirrorTopicsResponse)(v)
	default:
		return nil, errors.New("mirroradmin: unexpected response type")
	}
	out := make(TopicResults, 0, len(r.Topics))
	for _, t := range r.Topics {
		out = append(out, TopicResult{Topic: t.Name, ID: TopicID(t.TopicID), Err: errorFor(t.ErrorCode, t.ErrorMessage)})
	}
	return out, errorFor(r.ErrorCode, r.ErrorMessage)
}
