package metadata

// NoLeader is the Leader of a partition that has none.
const NoLeader int32 = -1

// LeaderRecoveryState says whether a partition's leader, elected uncleanly,
// is still recovering its log (Kafka's LeaderRecoveryState).
type LeaderRecoveryState int8

// Leader recovery states.
const (
	Recovered  LeaderRecoveryState = 0
	Recovering LeaderRecoveryState = 1
)

// PartitionState is a partition's replica assignment and leadership. Treat
// it as immutable: images share its slices.
type PartitionState struct {
	// Replicas in preferred order; includes AddingReplicas and
	// RemovingReplicas during a reassignment.
	Replicas         []int32
	ISR              []int32
	RemovingReplicas []int32
	AddingReplicas   []int32
	// Leader is a member of ISR, or NoLeader.
	Leader              int32
	LeaderRecoveryState LeaderRecoveryState
	// LeaderEpoch increases by one every time a PartitionChangeRecord sets
	// the leader (even to the same broker).
	LeaderEpoch int32
	// PartitionEpoch increases by one on every PartitionChangeRecord.
	PartitionEpoch int32
}

// HasReplica reports whether broker id is one of the partition's replicas.
func (p PartitionState) HasReplica(id int32) bool { return contains(p.Replicas, id) }

// Reassigning reports whether the partition is being reassigned: it has
// replicas being added or removed.
func (p PartitionState) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// InISR reports whether broker id is in the partition's ISR.
func (p PartitionState) InISR(id int32) bool { return contains(p.ISR, id) }

func contains(vs []int32, v int32) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// TopicRecord creates a topic.
type TopicRecord struct {
	Name string
	ID   Uuid
}

// Type implements Record.
func (*TopicRecord) Type() RecordType { return TypeTopic }

// Version implements Record.
func (*TopicRecord) Version() int16 { return 0 }

func (x *TopicRecord) appendFields(b []byte) []byte {
	b = appendCompactString(b, x.Name)
	b = appendUUID(b, x.ID)
	return appendTags(b)
}

func (x *TopicRecord) readFields(r *reader, _ int16) {
	x.Name = r.string("Name")
	x.ID = r.uuid("TopicId")
	r.tags("TopicRecord", nil)
}

// PartitionRecord creates a partition or replaces its whole state. Written at
// Kafka's version 0; versions 0-2 decode (directories and eligible leader
// replicas of later versions are not used by kmirror).
type PartitionRecord struct {
	TopicID   Uuid
	Partition int32
	PartitionState
}

// Type implements Record.
func (*PartitionRecord) Type() RecordType { return TypePartition }

// Version implements Record.
func (*PartitionRecord) Version() int16 { return 0 }

func (x *PartitionRecord) appendFields(b []byte) []byte {
	b = appendInt32(b, x.Partition)
	b = appendUUID(b, x.TopicID)
	b = appendInt32Array(b, x.Replicas)
	b = appendInt32Array(b, x.ISR)
	b = appendInt32Array(b, x.RemovingReplicas)
	b = appendInt32Array(b, x.AddingReplicas)
	b = appendInt32(b, x.Leader)
	b = appendInt32(b, x.LeaderEpoch)
	b = appendInt32(b, x.PartitionEpoch)
	if x.LeaderRecoveryState != Recovered {
		return appendTags(b, taggedField{0, []byte{byte(x.LeaderRecoveryState)}})
	}
	return appendTags(b)
}

func (x *PartitionRecord) readFields(r *reader, v int16) {
	x.Partition = r.int32("PartitionId")
	x.TopicID = r.uuid("TopicId")
	x.Replicas = r.int32Array("Replicas")
	x.ISR = r.int32Array("Isr")
	x.RemovingReplicas = r.int32Array("RemovingReplicas")
	x.AddingReplicas = r.int32Array("AddingReplicas")
	x.Leader = r.int32("Leader")
	x.LeaderEpoch = r.int32("LeaderEpoch")
	x.PartitionEpoch = r.int32("PartitionEpoch")
	if v >= 1 {
		r.skipUUIDArray("Directories")
	}
	r.tags("PartitionRecord", func(tag uint32, fr *reader) bool {
		if tag != 0 {
			return false
		}
		x.LeaderRecoveryState = LeaderRecoveryState(fr.int8("LeaderRecoveryState"))
		return true
	})
}

// PartitionChangeRecord changes some of a partition's state. Every nil field
// is left unchanged. Applying one always bumps the partition epoch; setting
// Leader (to any value, even the current leader or NoLeader) also bumps the
// leader epoch, which is how Kafka's controller fences the old leader.
// Written at Kafka's version 0; versions 0-2 decode.
//
// LeaderEpoch is kmirror's own field (tagged field MinLeaderEpochTag, which
// Kafka does not define): when set, the new leader epoch is at least its
// value, max(old+1, LeaderEpoch), and the record is a leader change even if
// Leader is nil (the leader stays). A mirrored partition holds the source's
// leader epochs in its log; failing it over needs its own epoch above all of
// them, which an ordinary bump by one may not reach.
type PartitionChangeRecord struct {
	TopicID          Uuid
	Partition        int32
	ISR              []int32 // nil: unchanged
	Leader           *int32  // nil: unchanged; NoLeader: none
	Replicas         []int32 // nil: unchanged
	RemovingReplicas []int32 // nil: unchanged
	AddingReplicas   []int32 // nil: unchanged
	// LeaderRecoveryState is nil when unchanged.
	LeaderRecoveryState *LeaderRecoveryState
	// LeaderEpoch is nil for an ordinary change; otherwise the least leader
	// epoch the partition has after it (kmirror's explicit epoch bump).
	LeaderEpoch *int32
}

// MinLeaderEpochTag is the tagged field of PartitionChangeRecord.LeaderEpoch.
// Kafka's own tags of the record are 0 to 8; kmirror's numbers are far above
// them (0x4b4d, "KM", is the internal-topic tag of CreateTopics), so that a
// future Kafka tag cannot collide with it.
const MinLeaderEpochTag uint32 = 0x4b4e

// noLeaderChange is the wire value of an unchanged leader.
const noLeaderChange int32 = -2

// Type implements Record.
func (*PartitionChangeRecord) Type() RecordType { return TypePartitionChange }

// Version implements Record.
func (*PartitionChangeRecord) Version() int16 { return 0 }

func (x *PartitionChangeRecord) appendFields(b []byte) []byte {
	b = appendInt32(b, x.Partition)
	b = appendUUID(b, x.TopicID)
	var tags []taggedField
	arr := func(tag uint32, vs []int32) {
		if vs != nil {
			tags = append(tags, taggedField{tag, appendInt32Array(nil, vs)})
		}
	}
	arr(0, x.ISR)
	if x.Leader != nil && *x.Leader != noLeaderChange {
		tags = append(tags, taggedField{1, appendInt32(nil, *x.Leader)})
	}
	arr(2, x.Replicas)
	arr(3, x.RemovingReplicas)
	arr(4, x.AddingReplicas)
	if x.LeaderRecoveryState != nil && *x.LeaderRecoveryState != -1 {
		tags = append(tags, taggedField{5, []byte{byte(*x.LeaderRecoveryState)}})
	}
	if x.LeaderEpoch != nil {
		tags = append(tags, taggedField{MinLeaderEpochTag, appendInt32(nil, *x.LeaderEpoch)})
	}
	return appendTags(b, tags...)
}

func (x *PartitionChangeRecord) readFields(r *reader, _ int16) {
	x.Partition = r.int32("PartitionId")
	x.TopicID = r.uuid("TopicId")
	r.tags("PartitionChangeRecord", func(tag uint32, fr *reader) bool {
		switch tag {
		case 0:
			x.ISR = fr.nullableInt32Array("Isr")
		case 1:
			if l := fr.int32("Leader"); l != noLeaderChange {
				x.Leader = &l
			} else {
				x.Leader = nil
			}
		case 2:
			x.Replicas = fr.nullableInt32Array("Replicas")
		case 3:
			x.RemovingReplicas = fr.nullableInt32Array("RemovingReplicas")
		case 4:
			x.AddingReplicas = fr.nullableInt32Array("AddingReplicas")
		case 5:
			if s := LeaderRecoveryState(fr.int8("LeaderRecoveryState")); s != -1 {
				x.LeaderRecoveryState = &s
			} else {
				x.LeaderRecoveryState = nil
			}
		case MinLeaderEpochTag:
			e := fr.int32("LeaderEpoch")
			x.LeaderEpoch = &e
		default:
			return false
		}
		return true
	})
}

// RemoveTopicRecord deletes a topic, its partitions and its configs.
type RemoveTopicRecord struct {
	ID Uuid
}

// Type implements Record.
func (*RemoveTopicRecord) Type() RecordType { return TypeRemoveTopic }

// Version implements Record.
func (*RemoveTopicRecord) Version() int16 { return 0 }

func (x *RemoveTopicRecord) appendFields(b []byte) []byte {
	return appendTags(appendUUID(b, x.ID))
}

func (x *RemoveTopicRecord) readFields(r *reader, _ int16) {
	x.ID = r.uuid("TopicId")
	r.tags("RemoveTopicRecord", nil)
}
