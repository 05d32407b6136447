package controller

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kmirror's internal tags. The cluster's own nodes ask the controller for
// things no Kafka API expresses by adding a tagged field, numbered far above
// Kafka's own tags, to a standard request (flexible versions only). A tag
// counts only when the request comes from the cluster's own nodes: on a
// controller listener, or through this node's Channel. Channel.Send strips
// every internal tag from the requests it forwards (a client's request
// through a broker) and handleWire strips them from requests on any other
// listener, so that on the serving side a tag that is present is always
// internal.
//
// The AlterPartition leader-epoch bump (mirror_bump_epoch.go) is the one tag
// that sits on a partition entry instead of the request.
const (
	// internalTopicTag on CreateTopics: create an internal topic
	// (Channel.CreateInternalTopic); value 1.
	internalTopicTag uint32 = 0x4b4d
	// mirrorACLSyncTag on CreateAcls: ACLs of a mirror's sync, stored
	// under their synced ids (Channel.CreateSyncedACLs); value: the
	// mirror's name.
	mirrorACLSyncTag uint32 = 0x4b4f
	// mirrorSyncTag on IncrementalAlterConfigs and CreatePartitions: a
	// mirror's config or partition-count sync writing to its own topics,
	// which refuse those changes from anyone else (Channel.SyncMirrorTopics);
	// value: the mirror's name.
	mirrorSyncTag uint32 = 0x4b50
	// failoverCompleteTag on IncrementalAlterConfigs: a partition leader
	// reports that a removed topic's partitions reached STOPPED
	// (Channel.CompleteFailover); value: the topic's id.
	failoverCompleteTag uint32 = 0x4b51
)

// requestTagged are the request-level internal tags.
var requestTagged = []uint32{internalTopicTag, mirrorACLSyncTag, mirrorSyncTag, failoverCompleteTag}

// requestTags returns the request-level tagged fields of the requests that
// can carry an internal tag, nil for others.
func requestTags(req kmsg.Request) *kmsg.Tags {
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		return &r.UnknownTags
	case *kmsg.CreateACLsRequest:
		return &r.UnknownTags
	case *kmsg.IncrementalAlterConfigsRequest:
		return &r.UnknownTags
	case *kmsg.CreatePartitionsRequest:
		return &r.UnknownTags
	}
	return nil
}

// tagValue returns the value of tag on req, if it carries it.
func tagValue(req kmsg.Request, tag uint32) ([]byte, bool) {
	tags := requestTags(req)
	if tags == nil {
		return nil, false
	}
	var v []byte
	found := false
	tags.Each(func(k uint32, b []byte) {
		if k == tag {
			v, found = b, true
		}
	})
	return v, found
}

// setTag sets tag on req (a request requestTags knows).
func setTag(req kmsg.Request, tag uint32, value []byte) {
	if tags := requestTags(req); tags != nil {
		tags.Set(tag, value)
	}
}

// stripInternalTags removes every internal tag from req, keeping other
// unknown tags.
func stripInternalTags(req kmsg.Request) {
	stripLeaderEpochBump(req)
	tags := requestTags(req)
	if tags == nil {
		return
	}
	var kept kmsg.Tags
	tags.Each(func(k uint32, v []byte) {
		for _, t := range requestTagged {
			if k == t {
				return
			}
		}
		kept.Set(k, v)
	})
	*tags = kept
}
