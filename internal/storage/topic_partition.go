package storage

import (
	"fmt"
	"strconv"
	"strings"
)

// TopicPartition names one partition of a topic. Its String form,
// "<topic>-<partition>", is also the name of the partition's directory.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String returns "topic-partition", Kafka's name for the partition and its
// directory.
func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

// ParseTopicPartitionDir parses a partition directory name "<topic>-<partition>"
// (topic names may themselves contain '-'; the partition is after the last
// one). Names of directories being deleted, future or stray replicas are not
// partition directories and are refused; see ParseDeletedDir.
func ParseTopicPartitionDir(name string) (TopicPartition, error) {
	if strings.HasSuffix(name, DeleteDirSuffix) || strings.HasSuffix(name, FutureDirSuffix) || strings.HasSuffix(name, StrayDirSuffix) {
		return TopicPartition{}, fmt.Errorf("%q is not a live partition directory", name)
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, fmt.Errorf("%q is not a partition directory name (want <topic>-<partition>)", name)
	}
	topic, num := name[:i], name[i+1:]
	for _, c := range num {
		if c < '0' || c > '9' {
			return TopicPartition{}, fmt.Errorf("%q: partition %q is not a number", name, num)
		}
	}
	p, err := strconv.ParseInt(num, 10, 32)
	if err != nil {
		return TopicPartition{}, fmt.Errorf("%q: partition %q: %w", name, num, err)
	}
	if strings.ContainsAny(topic, "/\x00") || topic == "." || topic == ".." {
		return TopicPartition{}, fmt.Errorf("%q: invalid topic name", name)
	}
	return TopicPartition{Topic: topic, Partition: int32(p)}, nil
}

// ParseDeletedDir parses the name Manager.AsyncDelete gives a partition
// directory, "<topic>-<partition>.<uuid>-delete", returning the partition.
func ParseDeletedDir(name string) (TopicPartition, bool) {
	rest, ok := strings.CutSuffix(name, DeleteDirSuffix)
	if !ok {
		return TopicPartition{}, false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return TopicPartition{}, false
	}
	tp, err := ParseTopicPartitionDir(rest[:i])
	return tp, err == nil
}
