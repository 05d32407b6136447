package broker

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleDescribeLogDirs serves DescribeLogDirs v0–v4: every log directory
// of this broker with the requested partitions it holds (all for a null
// topic list), their sizes and offset lag (how far the log end is behind
// the high watermark), and from v4 the directory's total and usable bytes.
func (b *Broker) handleDescribeLogDirs(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.DescribeLogDirsRequest)
	if !ok {
		return nil, requestTypeError("DescribeLogDirs", kreq)
	}
	var want map[storage.TopicPartition]bool
	if req.Topics != nil {
		want = map[storage.TopicPartition]bool{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				want[storage.TopicPartition{Topic: t.Topic, Partition: p}] = true
			}
		}
	}
	byDir := map[string][]*storage.Log{}
	for _, l := range b.deps.Logs.Logs() {
		tp := l.TopicPartition()
		if want != nil && !want[tp] {
			continue
		}
		d := filepath.Clean(filepath.Dir(l.Dir()))
		byDir[d] = append(byDir[d], l)
	}
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	for _, dir := range b.cfg.Cfg.LogDirs {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = dir
		rd.TotalBytes, rd.UsableBytes = -1, -1
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			rd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		if req.Version >= 4 {
			rd.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
			rd.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
		}
		logs := byDir[filepath.Clean(dir)]
		slices.SortFunc(logs, func(x, y *storage.Log) int {
			a, c := x.TopicPartition(), y.TopicPartition()
			if a.Topic != c.Topic {
				if a.Topic < c.Topic {
					return -1
				}
				return 1
			}
			return int(a.Partition - c.Partition)
		})
		for _, l := range logs {
			tp := l.TopicPartition()
			if n := len(rd.Topics); n == 0 || rd.Topics[n-1].Topic != tp.Topic {
				rt := kmsg.NewDescribeLogDirsResponseDirTopic()
				rt.Topic = tp.Topic
				rd.Topics = append(rd.Topics, rt)
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition = tp.Partition
			rp.Size = l.Size()
			rp.OffsetLag = max(l.HighWatermark()-l.LogEndOffset(), 0)
			t := &rd.Topics[len(rd.Topics)-1]
			t.Partitions = append(t.Partitions, rp)
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return resp, nil
}
