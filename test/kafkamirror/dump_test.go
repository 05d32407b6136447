package kafkamirror_test

import (
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/testcluster/kafkacluster"
)

// segmentFiles returns the .log segment files of a partition directory,
// in offset order (the names are 20-digit base offsets).
func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no segment in %s (%v)", dir, err)
	}
	slices.Sort(files)
	return files
}

// positionField is the batch line's file position: the only field of a
// batch line that depends on where a segment starts rather than on the
// batch.
var positionField = regexp.MustCompile(` position: \d+`)

// dumpBatchLines parses a dump tool's output (Kafka's DumpLogSegments or
// kmirror dump-log, which prints Kafka's format) into each file's batch
// lines; without keepPosition the position field is removed.
func dumpBatchLines(out string, keepPosition bool) map[string][]string {
	files := map[string][]string{}
	var cur string
	for line := range strings.SplitSeq(out, "\n") {
		switch {
		case strings.HasPrefix(line, "Dumping "):
			cur = strings.TrimPrefix(line, "Dumping ")
			files[cur] = nil
		case strings.HasPrefix(line, "baseOffset: "):
			if !keepPosition {
				line = positionField.ReplaceAllString(line, "")
			}
			files[cur] = append(files[cur], strings.TrimSpace(line))
		}
	}
	return files
}

// compareDumps runs Kafka's DumpLogSegments over the segment files of
// every partition of topics, Kafka's (on source node 1, an in-sync
// replica: the same bytes as the leader's) and kmirror's (its only node),
// and checks that it reads them all and prints the same batch lines for
// both — base and last offsets, count, sequences, producer id and epoch,
// partition leader epoch, transactional and control flags, timestamp,
// size, codec, CRC, validity — except the file position, which depends on
// where each cluster rolled its segments. Then kmirror dump-log reads
// Kafka's files and prints Kafka's own lines for them, positions included.
//
// kmirror's node is stopped first: a running node's active segment may
// end in zeros written ahead of the data (storage's warm-ahead), which
// sealing the segment trims, as a Kafka segment with preallocate=true ends
// in zeros while active; Kafka's tool stops at those zeros in both
// (dumpPreallocated shows it for Kafka's own).
func compareDumps(t *testing.T, s *source, d *dest, topics []string) {
	t.Helper()
	d.c.Nodes()[0].Stop()
	type part struct{ kafka, kmirror []string }
	parts := map[string]part{}
	var all, kafkaFiles []string
	for _, topic := range topics {
		n := partitionCount(t, s, topic)
		for p := range n {
			name := fmt.Sprintf("%s-%d", topic, p)
			pt := part{
				kafka:   segmentFiles(t, filepath.Join(s.kc.LogDir(1), name)),
				kmirror: segmentFiles(t, filepath.Join(d.c.Nodes()[0].Dir, "data", name)),
			}
			parts[name] = pt
			all = append(all, pt.kafka...)
			all = append(all, pt.kmirror...)
			kafkaFiles = append(kafkaFiles, pt.kafka...)
		}
	}
	res := s.tool(t, "org.apache.kafka.tools.DumpLogSegments", "--files", strings.Join(all, ","))
	dumped := dumpBatchLines(res.Stdout, false)
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		pt := parts[name]
		var kafka, kmirror []string
		for _, f := range pt.kafka {
			kafka = append(kafka, dumped[f]...)
		}
		for _, f := range pt.kmirror {
			kmirror = append(kmirror, dumped[f]...)
		}
		if len(kafka) == 0 {
			t.Errorf("%s: DumpLogSegments printed no batch of Kafka's segments %v", name, pt.kafka)
		}
		if !slices.Equal(kafka, kmirror) {
			t.Errorf("%s: DumpLogSegments prints %d batches for Kafka's segments %v and %d for kmirror's %v; first difference:\n%s",
				name, len(kafka), pt.kafka, len(kmirror), pt.kmirror, firstLineDiff(kafka, kmirror))
		}
	}

	// kmirror dump-log on Kafka's files.
	withPos := dumpBatchLines(res.Stdout, true)
	cmd := exec.Command(testcluster.BuildBinary(t), append([]string{"dump-log"}, kafkaFiles...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kmirror dump-log on Kafka's segments: %v\n%s", err, out)
	}
	ours := dumpBatchLines(string(out), true)
	for _, f := range kafkaFiles {
		if len(ours[f]) == 0 {
			t.Errorf("kmirror dump-log printed no batch of %s:\n%s", f, out)
		}
		if !slices.Equal(withPos[f], ours[f]) {
			t.Errorf("%s: kmirror dump-log prints %d batches, DumpLogSegments %d; first difference:\n%s",
				f, len(ours[f]), len(withPos[f]), firstLineDiff(withPos[f], ours[f]))
		}
	}
}

func firstLineDiff(a, b []string) string {
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  Kafka:   %s\n  kmirror: %s", i, x, y)
		}
	}
	return "none"
}

// partitionCount returns topic's partition count on the source.
func partitionCount(t testing.TB, s *source, topic string) int32 {
	t.Helper()
	md, err := s.admin(t).Metadata(ctxFor(t), topic)
	if err != nil || md.Topics[topic].Err != nil {
		t.Fatalf("metadata of %s: %v %v", topic, err, md.Topics[topic].Err)
	}
	return int32(len(md.Topics[topic].Partitions))
}

// dumpPreallocated shows what Kafka's DumpLogSegments does with the active
// segment of a Kafka topic with preallocate=true: it prints the batches,
// then fails on the zeros after them. kmirror dump-log reads the same file
// to the end: the same batch lines, and the zeros reported as no data.
func dumpPreallocated(t *testing.T, s *source) {
	t.Helper()
	const topic = "preallocated"
	s.createTopic(t, topic, 1, map[string]string{"preallocate": "true"})
	produceBatches(t, s.client(t, manualProducer()...), topic, 0, 3)
	file := segmentFiles(t, filepath.Join(s.kc.LogDir(1), topic+"-0"))[0]
	res := kafkacluster.RunTool(t, "org.apache.kafka.tools.DumpLogSegments", "--files", file)
	kafka := dumpBatchLines(res.Stdout, true)[file]
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "CorruptRecordException: Found record size 0") || len(kafka) != 3 {
		t.Errorf("DumpLogSegments on a preallocated active segment exited %d with %d batches:\n%s\n%s", res.ExitCode, len(kafka), res.Stdout, res.Stderr)
	}
	out, err := exec.Command(testcluster.BuildBinary(t), "dump-log", file).CombinedOutput()
	ours := dumpBatchLines(string(out), true)[file]
	if err != nil || !slices.Equal(ours, kafka) || !strings.Contains(string(out), "zero bytes at the end of the file") {
		t.Errorf("kmirror dump-log on a preallocated active segment: %v\n%s", err, out)
	}
}
