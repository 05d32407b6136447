package wire

import (
	"context"
	"encoding/binary"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeMirrorsRequest (key 9005) describes mirrors: their configs (secrets
// hidden), topics, per-partition state and lag, and periodic syncs. It is an
// admin request: kgo routes it to the controller.
type DescribeMirrorsRequest struct {
	// Version is the request version; only 0 exists.
	Version int16
	// MirrorNames are the mirrors to describe; nil (null on the wire) means
	// all mirrors, an empty non-nil slice means none.
	MirrorNames []string
	// IncludePartitions asks for per-partition detail in every topic.
	IncludePartitions bool
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// Key returns 9005.
func (*DescribeMirrorsRequest) Key() int16 { return KeyDescribeMirrors }

// MaxVersion returns 0.
func (*DescribeMirrorsRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version of the request and of its response.
func (v *DescribeMirrorsRequest) SetVersion(version int16) { v.Version = version }

// GetVersion returns the request version.
func (v *DescribeMirrorsRequest) GetVersion() int16 { return v.Version }

// IsFlexible returns true: every mirror message uses the flexible encoding.
func (*DescribeMirrorsRequest) IsFlexible() bool { return true }

// IsAdminRequest marks the request for the controller.
func (*DescribeMirrorsRequest) IsAdminRequest() {}

// ResponseKind returns an empty response of the request's version.
func (v *DescribeMirrorsRequest) ResponseKind() kmsg.Response {
	return &DescribeMirrorsResponse{Version: v.Version}
}

// RequestWith issues the request on r and returns the typed response.
func (v *DescribeMirrorsRequest) RequestWith(ctx context.Context, r kmsg.Requestor) (*DescribeMirrorsResponse, error) {
	return requestWith[*DescribeMirrorsResponse](ctx, r, v)
}

// AppendTo appends the request body.
func (v *DescribeMirrorsRequest) AppendTo(dst []byte) []byte {
	if v.MirrorNames == nil {
		dst = AppendCompactArrayLen(dst, -1)
	} else {
		dst = appendArray(dst, v.MirrorNames, func(b []byte, s *string) []byte { return AppendCompactString(b, *s) })
	}
	dst = AppendBool(dst, v.IncludePartitions)
	return AppendTags(dst, v.UnknownTags)
}

// ReadFrom decodes a whole request body of v.Version, replacing v's fields.
func (v *DescribeMirrorsRequest) ReadFrom(src []byte) error {
	*v = DescribeMirrorsRequest{Version: v.Version}
	if err := checkVersion(v.Key(), v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	if n := r.CompactArrayLen(minString); n >= 0 {
		v.MirrorNames = make([]string, n)
		for i := range v.MirrorNames {
			v.MirrorNames[i] = r.CompactString()
		}
	}
	v.IncludePartitions = r.Bool()
	v.UnknownTags = r.Tags()
	if err := finish(r, v.Key(), "request"); err != nil {
		v.MirrorNames = nil
		return err
	}
	return nil
}

// DescribeMirrorsResponse answers DescribeMirrorsRequest.
type DescribeMirrorsResponse struct {
	// Version is the response version; only 0 exists.
	Version int16
	// ThrottleMillis is how long the client should wait before its next
	// request (applied after the response).
	ThrottleMillis int32
	// ErrorCode is a request-level error; per-mirror errors are in Mirrors.
	ErrorCode int16
	// Mirrors holds one entry per described mirror.
	Mirrors []DescribeMirrorsResponseMirror
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// DescribeMirrorsResponseMirror describes one mirror.
type DescribeMirrorsResponseMirror struct {
	// Name is the mirror's name.
	Name string
	// ErrorCode is a per-mirror error, e.g. RESOURCE_NOT_FOUND for an
	// unknown name.
	ErrorCode int16
	// ErrorMessage explains a non-zero ErrorCode.
	ErrorMessage *string
	// Configs are the mirror's source properties; sensitive values are null.
	Configs []DescribeMirrorsResponseConfig
	// Topics are the topics whose mirror.name refers to this mirror.
	Topics []DescribeMirrorsResponseTopic
	// Syncs report the periodic synchronisations of the mirror.
	Syncs []DescribeMirrorsResponseSync
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// DescribeMirrorsResponseConfig is one mirror property.
type DescribeMirrorsResponseConfig struct {
	// Name is the property name.
	Name string
	// Value is the property value, always null when Sensitive.
	Value *string
	// Sensitive marks a secret (password, JAAS config, key) whose value is
	// never returned.
	Sensitive bool
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// DescribeMirrorsResponseTopic describes one mirrored topic.
type DescribeMirrorsResponseTopic struct {
	// Name is the topic name.
	Name string
	// TopicID is the topic's id (the same on source and destination).
	TopicID [16]byte
	// MirrorNameConfig is the raw mirror.name value, e.g. "m", "m.paused"
	// or "m.removed".
	MirrorNameConfig string
	// Partitions are present when the request asked for them.
	Partitions []DescribeMirrorsResponsePartition
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// DescribeMirrorsResponsePartition is the mirror state of one partition.
type DescribeMirrorsResponsePartition struct {
	// Partition is the partition index.
	Partition int32
	// State is the partition's mirror state.
	State MirrorPartitionState
	// LeaderID is the destination leader driving the state machine, -1 if
	// none.
	LeaderID int32
	// SourceHighWatermark is the source partition's last known high
	// watermark, -1 if unknown.
	SourceHighWatermark int64
	// SourceLogStartOffset is the source partition's last known log start
	// offset, -1 if unknown.
	SourceLogStartOffset int64
	// DestinationLogEndOffset is the destination partition's log end offset.
	DestinationLogEndOffset int64
	// Lag is SourceHighWatermark minus DestinationLogEndOffset, floored at
	// 0, or -1 if unknown.
	Lag int64
	// LastFetchMillis is the time of the last successful fetch from the
	// source (Unix milliseconds), -1 if none.
	LastFetchMillis int64
	// StateChangeMillis is when State was entered (Unix milliseconds).
	StateChangeMillis int64
	// LastError is the last error of the partition's mirroring, if any.
	LastError *string
	// LastStableOffset is where a failover now would cut the destination
	// partition: the first offset of its oldest open transaction, or its
	// log end with none (a transaction-clean point; unlike a consumer's
	// last stable offset it does not stop at the high watermark), -1 if
	// unknown. Tagged field 0.
	LastStableOffset int64
	// LagMillis is how far behind the source the partition is in time
	// (0 without lag), -1 if unknown. Tagged field 1.
	LagMillis int64
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// The tagged fields of DescribeMirrorsResponsePartition.
const (
	tagPartitionLastStableOffset uint32 = 0
	tagPartitionLagMillis        uint32 = 1
)

// DescribeMirrorsResponseSync reports one kind of periodic sync (e.g.
// "configs", "partitions", "group-offsets", "acls").
type DescribeMirrorsResponseSync struct {
	// Kind names the sync.
	Kind string
	// LastSuccessMillis is when it last succeeded (Unix milliseconds), -1 if
	// never.
	LastSuccessMillis int64
	// LastError is the error of the last failed attempt, if the last attempt
	// failed.
	LastError *string
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

const (
	minDescribeMirrorsConfig    = minString + 1 + 1 + minTags
	minDescribeMirrorsPartition = 4 + 1 + 4 + 6*8 + 1 + minTags
	minDescribeMirrorsTopic     = minString + minUUID + minString + 1 + minTags
	minDescribeMirrorsSync      = minString + 8 + 1 + minTags
	minDescribeMirrorsMirror    = minString + 2 + 1 + 1 + 1 + 1 + minTags
)

func (c *DescribeMirrorsResponseConfig) appendTo(b []byte) []byte {
	b = AppendCompactString(b, c.Name)
	b = AppendCompactNullableString(b, c.Value)
	b = AppendBool(b, c.Sensitive)
	return AppendTags(b, c.UnknownTags)
}

func (c *DescribeMirrorsResponseConfig) readFrom(r *Reader) {
	c.Name = r.CompactString()
	c.Value = r.CompactNullableString()
	c.Sensitive = r.Bool()
	c.UnknownTags = r.Tags()
}

func (p *DescribeMirrorsResponsePartition) appendTo(b []byte) []byte {
	b = AppendInt32(b, p.Partition)
	b = AppendInt8(b, int8(p.State))
	b = AppendInt32(b, p.LeaderID)
	b = AppendInt64(b, p.SourceHighWatermark)
	b = AppendInt64(b, p.SourceLogStartOffset)
	b = AppendInt64(b, p.DestinationLogEndOffset)
	b = AppendInt64(b, p.Lag)
	b = AppendInt64(b, p.LastFetchMillis)
	b = AppendInt64(b, p.StateChangeMillis)
	b = AppendCompactNullableString(b, p.LastError)
	tags := slices.Clone(p.UnknownTags)
	tags.Set(tagPartitionLastStableOffset, AppendInt64(nil, p.LastStableOffset))
	tags.Set(tagPartitionLagMillis, AppendInt64(nil, p.LagMillis))
	return AppendTags(b, tags)
}

func (p *DescribeMirrorsResponsePartition) readFrom(r *Reader) {
	p.Partition = r.Int32()
	p.State = MirrorPartitionState(r.Int8())
	p.LeaderID = r.Int32()
	p.SourceHighWatermark = r.Int64()
	p.SourceLogStartOffset = r.Int64()
	p.DestinationLogEndOffset = r.Int64()
	p.Lag = r.Int64()
	p.LastFetchMillis = r.Int64()
	p.StateChangeMillis = r.Int64()
	p.LastError = r.CompactNullableString()
	p.UnknownTags = r.Tags()
	p.LastStableOffset, p.LagMillis = -1, -1
	var kept Tags
	for _, t := range p.UnknownTags {
		switch {
		case t.Key == tagPartitionLastStableOffset && len(t.Value) == 8:
			p.LastStableOffset = int64(binary.BigEndian.Uint64(t.Value))
		case t.Key == tagPartitionLagMillis && len(t.Value) == 8:
			p.LagMillis = int64(binary.BigEndian.Uint64(t.Value))
		default:
			kept = append(kept, t)
		}
	}
	p.UnknownTags = kept
}

func (t *DescribeMirrorsResponseTopic) appendTo(b []byte) []byte {
	b = AppendCompactString(b, t.Name)
	b = AppendUUID(b, t.TopicID)
	b = AppendCompactString(b, t.MirrorNameConfig)
	b = appendArray(b, t.Partitions, func(b []byte, p *DescribeMirrorsResponsePartition) []byte { return p.appendTo(b) })
	return AppendTags(b, t.UnknownTags)
}

func (t *DescribeMirrorsResponseTopic) readFrom(r *Reader) {
	t.Name = r.CompactString()
	t.TopicID = r.UUID()
	t.MirrorNameConfig = r.CompactString()
	t.Partitions = readArray(r, minDescribeMirrorsPartition, func(r *Reader, p *DescribeMirrorsResponsePartition) { p.readFrom(r) })
	t.UnknownTags = r.Tags()
}

func (s *DescribeMirrorsResponseSync) appendTo(b []byte) []byte {
	b = AppendCompactString(b, s.Kind)
	b = AppendInt64(b, s.LastSuccessMillis)
	b = AppendCompactNullableString(b, s.LastError)
	return AppendTags(b, s.UnknownTags)
}

func (s *DescribeMirrorsResponseSync) readFrom(r *Reader) {
	s.Kind = r.CompactString()
	s.LastSuccessMillis = r.Int64()
	s.LastError = r.CompactNullableString()
	s.UnknownTags = r.Tags()
}

func (m *DescribeMirrorsResponseMirror) appendTo(b []byte) []byte {
	b = AppendCompactString(b, m.Name)
	b = AppendInt16(b, m.ErrorCode)
	b = AppendCompactNullableString(b, m.ErrorMessage)
	b = appendArray(b, m.Configs, func(b []byte, c *DescribeMirrorsResponseConfig) []byte { return c.appendTo(b) })
	b = appendArray(b, m.Topics, func(b []byte, t *DescribeMirrorsResponseTopic) []byte { return t.appendTo(b) })
	b = appendArray(b, m.Syncs, func(b []byte, s *DescribeMirrorsResponseSync) []byte { return s.appendTo(b) })
	return AppendTags(b, m.UnknownTags)
}

func (m *DescribeMirrorsResponseMirror) readFrom(r *Reader) {
	m.Name = r.CompactString()
	m.ErrorCode = r.Int16()
	m.ErrorMessage = r.CompactNullableString()
	m.Configs = readArray(r, minDescribeMirrorsConfig, func(r *Reader, c *DescribeMirrorsResponseConfig) { c.readFrom(r) })
	m.Topics = readArray(r, minDescribeMirrorsTopic, func(r *Reader, t *DescribeMirrorsResponseTopic) { t.readFrom(r) })
	m.Syncs = readArray(r, minDescribeMirrorsSync, func(r *Reader, s *DescribeMirrorsResponseSync) { s.readFrom(r) })
	m.UnknownTags = r.Tags()
}

// Key returns 9005.
func (*DescribeMirrorsResponse) Key() int16 { return KeyDescribeMirrors }

// MaxVersion returns 0.
func (*DescribeMirrorsResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the response version.
func (v *DescribeMirrorsResponse) SetVersion(version int16) { v.Version = version }

// GetVersion returns the response version.
func (v *DescribeMirrorsResponse) GetVersion() int16 { return v.Version }

// IsFlexible returns true.
func (*DescribeMirrorsResponse) IsFlexible() bool { return true }

// Throttle returns ThrottleMillis; the throttle applies after the response.
func (v *DescribeMirrorsResponse) Throttle() (int32, bool) { return v.ThrottleMillis, true }

// SetThrottle sets ThrottleMillis.
func (v *DescribeMirrorsResponse) SetThrottle(throttleMillis int32) {
	v.ThrottleMillis = throttleMillis
}

// RequestKind returns an empty request of the response's version.
func (v *DescribeMirrorsResponse) RequestKind() kmsg.Request {
	return &DescribeMirrorsRequest{Version: v.Version}
}

// AppendTo appends the response body.
func (v *DescribeMirrorsResponse) AppendTo(dst []byte) []byte {
	dst = AppendInt32(dst, v.ThrottleMillis)
	dst = AppendInt16(dst, v.ErrorCode)
	dst = appendArray(dst, v.Mirrors, func(b []byte, m *DescribeMirrorsResponseMirror) []byte { return m.appendTo(b) })
	return AppendTags(dst, v.UnknownTags)
}

// ReadFrom decodes a whole response body of v.Version, replacing v's fields.
func (v *DescribeMirrorsResponse) ReadFrom(src []byte) error {
	*v = DescribeMirrorsResponse{Version: v.Version}
	if err := checkVersion(v.Key(), v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	v.ThrottleMillis = r.Int32()
	v.ErrorCode = r.Int16()
	v.Mirrors = readArray(r, minDescribeMirrorsMirror, func(r *Reader, m *DescribeMirrorsResponseMirror) { m.readFrom(r) })
	v.UnknownTags = r.Tags()
	return finish(r, v.Key(), "response")
}
