package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Kafka's checkpoint files share one text layout:
//
//	0            version
//	<count>      number of entries
//	<entry>...   one per line, fields separated by single spaces
//
// OffsetCheckpoint (recovery-point-offset-checkpoint,
// log-start-offset-checkpoint, replication-offset-checkpoint) entries are
// "<topic> <partition> <offset>"; leader-epoch-checkpoint entries are
// "<epoch> <startOffset>".

const checkpointVersion = 0

// readCheckpointLines reads a checkpoint file and returns its entry lines,
// each split into exactly fields fields. A missing file has no entries.
func readCheckpointLines(path string, fields int) ([][]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseCheckpoint(path, data, fields)
}

func parseCheckpoint(path string, data []byte, fields int) ([][]string, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("checkpoint %s: %s: %w", path, fmt.Sprintf(format, args...), ErrCorruptCheckpoint)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	v, ok := line()
	if !ok {
		return nil, bad("empty file")
	}
	if version, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || version != checkpointVersion {
		return nil, bad("unsupported version %q", v)
	}
	c, ok := line()
	if !ok {
		return nil, bad("missing entry count")
	}
	count, err := strconv.Atoi(strings.TrimSpace(c))
	if err != nil || count < 0 {
		return nil, bad("bad entry count %q", c)
	}
	// The count is untrusted: grow the slice as lines are actually read.
	var out [][]string
	for i := 0; i < count; i++ {
		l, ok := line()
		if !ok {
			return nil, bad("expected %d entries, found %d", count, i)
		}
		f := strings.Fields(l)
		if len(f) != fields {
			return nil, bad("malformed entry %q", l)
		}
		out = append(out, f)
	}
	for {
		l, ok := line()
		if !ok {
			break
		}
		if strings.TrimSpace(l) != "" {
			return nil, bad("more entries than the count %d", count)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, bad("%v", err)
	}
	return out, nil
}

// formatCheckpoint renders entries (already formatted lines) in the
// checkpoint layout.
func formatCheckpoint(lines []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// ReadOffsetCheckpoint reads one of a log directory's offset checkpoint files
// (recovery points, log start offsets or high watermarks). A missing file is
// an empty map.
func ReadOffsetCheckpoint(path string) (map[TopicPartition]int64, error) {
	lines, err := readCheckpointLines(path, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(lines))
	for _, f := range lines {
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 {
			return nil, fmt.Errorf("checkpoint %s: malformed entry %q: %w", path, strings.Join(f, " "), ErrCorruptCheckpoint)
		}
		out[TopicPartition{Topic: f[0], Partition: int32(p)}] = off
	}
	return out, nil
}

// WriteOffsetCheckpoint atomically replaces an offset checkpoint file.
// Entries are written sorted by topic and partition so the file is stable.
func WriteOffsetCheckpoint(path string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	lines := make([]string, len(tps))
	for i, tp := range tps {
		lines[i] = fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, offsets[tp])
	}
	if err := writeFileAtomic(path, formatCheckpoint(lines)); err != nil {
		return fmt.Errorf("write checkpoint %s: %w", path, err)
	}
	return nil
}
