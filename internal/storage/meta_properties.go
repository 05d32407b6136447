package storage

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// MetaProperties is a log directory's meta.properties in its KRaft form
// (version=1): which cluster and node the directory belongs to, and the
// directory's own id. A node refuses to start on a directory of another
// cluster or node.
type MetaProperties struct {
	Version     int
	ClusterID   string
	NodeID      int32
	DirectoryID string
}

// ReadMetaProperties reads dir/meta.properties. A missing file is an error
// wrapping fs.ErrNotExist.
func ReadMetaProperties(dir string) (MetaProperties, error) {
	path := filepath.Join(dir, MetaPropertiesFileName)
	data, err := os.ReadFile(path)
	if err != nil {
		return MetaProperties{}, err
	}
	props, err := parseProperties(data)
	if err != nil {
		return MetaProperties{}, fmt.Errorf("%s: %w", path, err)
	}
	var mp MetaProperties
	v, ok := props["version"]
	if !ok {
		return mp, fmt.Errorf("%s: no version: %w", path, ErrCorruptCheckpoint)
	}
	if mp.Version, err = strconv.Atoi(v); err != nil || mp.Version != 1 {
		return mp, fmt.Errorf("%s: unsupported version %q (only the KRaft form, version=1, is supported): %w", path, v, ErrCorruptCheckpoint)
	}
	mp.ClusterID = props["cluster.id"]
	n, ok := props["node.id"]
	if !ok || mp.ClusterID == "" {
		return mp, fmt.Errorf("%s: cluster.id and node.id are required: %w", path, ErrCorruptCheckpoint)
	}
	id, err := strconv.ParseInt(n, 10, 32)
	if err != nil {
		return mp, fmt.Errorf("%s: node.id %q: %w", path, n, ErrCorruptCheckpoint)
	}
	mp.NodeID = int32(id)
	mp.DirectoryID = props["directory.id"]
	return mp, nil
}

// WriteMetaProperties atomically writes dir/meta.properties in Java
// properties syntax, as Kafka's storage format tool does.
func WriteMetaProperties(dir string, mp MetaProperties) error {
	props := map[string]string{
		"version":    strconv.Itoa(mp.Version),
		"cluster.id": mp.ClusterID,
		"node.id":    strconv.FormatInt(int64(mp.NodeID), 10),
	}
	if mp.DirectoryID != "" {
		props["directory.id"] = mp.DirectoryID
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString("#\n#Written by kmirror\n")
	for _, k := range keys {
		b.WriteString(k + "=" + escapePropertyValue(props[k]) + "\n")
	}
	return writeFileAtomic(filepath.Join(dir, MetaPropertiesFileName), b.Bytes())
}

// NewDirectoryID returns a random id in Kafka's Uuid string form, avoiding
// what Kafka avoids: the reserved ids (first 15 bytes zero and the last below
// 100) and ids whose string form starts with '-' (command-line tools would
// take them for flags).
func NewDirectoryID() string {
	var id [16]byte
	for {
		_, _ = rand.Read(id[:]) // never fails since Go 1.24
		reserved := true
		for _, b := range id[:15] {
			if b != 0 {
				reserved = false
				break
			}
		}
		s := FormatUUID(id)
		if (!reserved || id[15] >= 100) && s[0] != '-' {
			return s
		}
	}
}

// parseProperties parses the subset of Java properties syntax Kafka writes:
// comment lines starting with # or !, "key=value" or "key: value" lines,
// backslash escapes.
func parseProperties(data []byte) (map[string]string, error) {
	out := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			return nil, fmt.Errorf("malformed line %q: %w", line, ErrCorruptCheckpoint)
		}
		out[unescapeProperty(strings.TrimSpace(line[:i]))] = unescapeProperty(strings.TrimSpace(line[i+1:]))
	}
	if err := sc.Err(); err != nil {
		return nil, errors.Join(err, ErrCorruptCheckpoint)
	}
	return out, nil
}

func unescapeProperty(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func escapePropertyValue(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `=`, `\=`, `:`, `\:`, `#`, `\#`, `!`, `\!`)
	return r.Replace(s)
}
