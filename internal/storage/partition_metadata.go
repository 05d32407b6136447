package storage

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// partition.metadata holds the partition's topic id, in Kafka's format:
//
//	version: 0
//	topic_id: <Uuid>
//
// where <Uuid> is Kafka's Uuid string form, the 16 bytes in URL-safe base64
// without padding (22 characters). A topic id of all zeros means "none".

// FormatUUID returns Kafka's string form of a Uuid (topic id, directory id).
func FormatUUID(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// ParseUUID parses Kafka's string form of a Uuid.
func ParseUUID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("%q is not a Kafka Uuid", s)
	}
	copy(id[:], b)
	return id, nil
}

func formatPartitionMetadata(topicID [16]byte) []byte {
	return []byte("version: 0\ntopic_id: " + FormatUUID(topicID))
}

// readPartitionMetadata returns the topic id stored in path; ok is false if
// the file does not exist.
func readPartitionMetadata(path string) (id [16]byte, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return id, false, nil
	}
	if err != nil {
		return id, false, err
	}
	id, err = parsePartitionMetadata(data)
	if err != nil {
		return id, false, fmt.Errorf("%s: %w", path, err)
	}
	return id, true, nil
}

func parsePartitionMetadata(data []byte) ([16]byte, error) {
	var id [16]byte
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) != 2 {
		return id, fmt.Errorf("want 2 lines, have %d: %w", len(lines), ErrCorruptCheckpoint)
	}
	kv := func(line, key string) (string, error) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != key {
			return "", fmt.Errorf("want %q line, have %q: %w", key, line, ErrCorruptCheckpoint)
		}
		return strings.TrimSpace(v), nil
	}
	v, err := kv(lines[0], "version")
	if err != nil {
		return id, err
	}
	if n, err := strconv.Atoi(v); err != nil || n != 0 {
		return id, fmt.Errorf("unsupported version %q: %w", v, ErrCorruptCheckpoint)
	}
	t, err := kv(lines[1], "topic_id")
	if err != nil {
		return id, err
	}
	id, err = ParseUUID(t)
	if err != nil {
		return id, fmt.Errorf("%w: %w", err, ErrCorruptCheckpoint)
	}
	return id, nil
}
