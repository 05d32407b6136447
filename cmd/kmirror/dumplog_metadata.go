package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
)

// The metadata log decoder (Kafka's --cluster-metadata-decoder). kmirror's
// metadata log is a raft log in a bolt file, not a Kafka segment: under
// <metadata.log.dir>/__cluster_metadata-0/ it is raft.db (every entry; a
// command entry is a batch of metadata records) and snapshots/*/state.bin
// (the image's records; internal/quorum/snapshot.go has the format).
// dump-log reads either file, or the directory (the log, then every
// snapshot). Each record prints as one-line JSON, as Kafka's decoder does,
// with secrets (SCRAM salts and keys, password configs) redacted.

// Names in a metadata log directory.
const (
	raftStoreFile    = "raft.db"
	snapshotsDir     = "snapshots"
	snapshotDataFile = "state.bin"
	snapshotMetaFile = "meta.json"
)

// raftLockWait bounds the wait for the bolt file's lock: a running node
// holds it, and the log is then read from a copy.
const raftLockWait = 500 * time.Millisecond

// isMetadataDir reports whether path is a directory of the metadata log.
func isMetadataDir(path string) bool {
	for _, name := range []string{raftStoreFile, snapshotsDir} {
		if _, err := os.Stat(filepath.Join(path, name)); err == nil {
			return true
		}
	}
	return false
}

// dumpMetadataDir prints a metadata log directory: the raft log, then each
// snapshot in index order.
func dumpMetadataDir(w io.Writer, dir string) error {
	var errs []error
	if _, err := os.Stat(filepath.Join(dir, raftStoreFile)); err == nil {
		if err := dumpRaftStore(w, filepath.Join(dir, raftStoreFile)); err != nil {
			errs = append(errs, err)
		}
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, snapshotsDir, "*", snapshotDataFile))
	sort.Strings(snaps) // raft names snapshots term-index-time, zero-padded: lexical order is index order
	for _, p := range snaps {
		data, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(w, "Dumping %s\n", p)
		printSnapshotMeta(w, filepath.Join(filepath.Dir(p), snapshotMetaFile))
		dumpMetadataSnapshot(w, data)
	}
	return errors.Join(errs...)
}

// dumpRaftStore prints every entry of a raft.db. The file is opened
// read-only; if a running node holds it, a copy is read instead.
func dumpRaftStore(w io.Writer, path string) (err error) {
	defer func() {
		// bbolt panics on some damaged files: report, do not crash.
		if r := recover(); r != nil {
			err = fmt.Errorf("reading the raft log: %v", r)
		}
	}()
	store, err := openRaftStore(path)
	if errors.Is(err, bbolt.ErrTimeout) {
		tmp, cerr := copyToTemp(path)
		if cerr != nil {
			return fmt.Errorf("the raft log is locked by a running node and could not be copied: %w", cerr)
		}
		defer os.RemoveAll(filepath.Dir(tmp))
		fmt.Fprintf(w, "(a running node holds %s: reading a copy)\n", path)
		store, err = openRaftStore(tmp)
	}
	if err != nil {
		return fmt.Errorf("open the raft log: %w", err)
	}
	defer store.Close()
	first, err := store.FirstIndex()
	if err != nil {
		return err
	}
	last, err := store.LastIndex()
	if err != nil {
		return err
	}
	term, _ := store.GetUint64([]byte("CurrentTerm"))
	fmt.Fprintf(w, "Raft log: firstIndex: %d lastIndex: %d currentTerm: %d\n", first, last, term)
	if last == 0 {
		return nil
	}
	for i := first; i <= last; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			fmt.Fprintf(w, "index: %d <unreadable: %v>\n", i, err)
			continue
		}
		printRaftEntry(w, &l)
	}
	return nil
}

func openRaftStore(path string) (*raftboltdb.BoltStore, error) {
	return raftboltdb.New(raftboltdb.Options{
		Path:        path,
		BoltOptions: &bbolt.Options{ReadOnly: true, Timeout: raftLockWait},
	})
}

// copyToTemp copies a file into a new temporary directory and returns the
// copy's path.
func copyToTemp(path string) (string, error) {
	dir, err := os.MkdirTemp("", "kmirror-dump-log-")
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(path))
	data, err := os.ReadFile(path)
	if err == nil {
		err = os.WriteFile(dst, data, 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dst, nil
}

// printRaftEntry prints one raft log entry: a command's metadata records,
// a configuration's servers, or just the entry's kind.
func printRaftEntry(w io.Writer, l *raft.Log) {
	at := "-"
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UTC().Format(time.RFC3339Nano)
	}
	fmt.Fprintf(w, "index: %d term: %d type: %s appendedAt: %s size: %d\n", l.Index, l.Term, l.Type, at, len(l.Data))
	switch l.Type {
	case raft.LogCommand:
		rs, err := metadata.DecodeBatch(l.Data)
		if err != nil {
			fmt.Fprintf(w, "| <undecodable: %v>\n", err)
			return
		}
		for _, r := range rs {
			fmt.Fprintf(w, "| %s\n", metadataRecordText(r))
		}
	case raft.LogConfiguration:
		cfg, err := decodeRaftConfiguration(l.Data)
		if err != nil {
			fmt.Fprintf(w, "| <undecodable: %v>\n", err)
			return
		}
		for _, s := range cfg.Servers {
			fmt.Fprintf(w, "| server: id: %s address: %s suffrage: %s\n", s.ID, s.Address, s.Suffrage)
		}
	}
}

// decodeRaftConfiguration is raft.DecodeConfiguration, which panics on bad
// bytes, turned into an error.
func decodeRaftConfiguration(b []byte) (cfg raft.Configuration, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return raft.DecodeConfiguration(b), nil
}

// metadataRecordJSON is a metadata record as printed.
type metadataRecordJSON struct {
	Type    string `json:"type"`
	Version int16  `json:"version"`
	Data    any    `json:"data"`
}

// metadataRecordText prints a record as one-line JSON, secrets redacted.
func metadataRecordText(r metadata.Record) string {
	return jsonText(metadataRecordJSON{Type: r.Type().String(), Version: r.Version(), Data: redacted(r)})
}

// redacted returns what to print of a record: the record itself, or a copy
// without its secrets.
func redacted(r metadata.Record) any {
	switch x := r.(type) {
	case *metadata.UserScramCredentialRecord:
		return redactedScram{Name: x.Name, Mechanism: x.Mechanism, Salt: redactedBytes(x.Salt),
			StoredKey: redactedBytes(x.StoredKey), ServerKey: redactedBytes(x.ServerKey), Iterations: x.Iterations}
	case *metadata.ConfigRecord:
		if !x.Remove && sensitiveConfig(x.ResourceType, x.Name) {
			c := *x
			c.Value = "<redacted>"
			return c
		}
	}
	return r
}

// redactedScram is a SCRAM credential record as printed: the field names
// of metadata.ScramCredential, its secrets replaced.
type redactedScram struct {
	Name       string
	Mechanism  int8
	Salt       string
	StoredKey  string
	ServerKey  string
	Iterations int32
}

// redactedBytes stands for a secret of len(b) bytes.
func redactedBytes(b []byte) string { return fmt.Sprintf("<redacted %d bytes>", len(b)) }

// sensitiveConfig reports whether a config's value is a secret: a mirror's
// secret properties (and any it does not know), a broker's password
// configs.
func sensitiveConfig(resourceType int8, name string) bool {
	switch resourceType {
	case metadata.ResourceMirror:
		return mirrorconfig.IsSensitive(name)
	case metadata.ResourceBroker:
		d, ok := config.BrokerDefinition(name)
		return ok && d.Type == config.TypePassword
	}
	return false
}

// printSnapshotMeta prints the index and term raft recorded for a
// snapshot, when its meta.json reads.
func printSnapshotMeta(w io.Writer, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var meta struct {
		ID    string
		Index uint64
		Term  uint64
		Size  int64
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		fmt.Fprintf(w, "snapshot meta: <undecodable: %v>\n", err)
		return
	}
	fmt.Fprintf(w, "snapshot: id: %s index: %d term: %d size: %d\n", meta.ID, meta.Index, meta.Term, meta.Size)
}

// snapshotMagic starts a metadata snapshot (internal/quorum/snapshot.go).
var snapshotMagic = []byte("KMIRMETA")

// maxSnapshotRecordBytes bounds one record's claimed length, as the
// quorum's reader does.
const maxSnapshotRecordBytes = 64 << 20

// dumpMetadataSnapshot prints a snapshot's header and records. Damage is
// reported where it is found; what precedes it is printed.
func dumpMetadataSnapshot(w io.Writer, data []byte) {
	const hdrLen = 8 + 2 + 8 + 8
	if len(data) < hdrLen || !bytes.Equal(data[:8], snapshotMagic) {
		fmt.Fprintf(w, "not a metadata snapshot: %d bytes without the %q header\n", len(data), snapshotMagic)
		return
	}
	version := binary.BigEndian.Uint16(data[8:])
	applied := binary.BigEndian.Uint64(data[10:])
	offset := binary.BigEndian.Uint64(data[18:])
	fmt.Fprintf(w, "version: %d appliedIndex: %d imageOffset: %d\n", version, applied, offset)
	if version != 1 {
		fmt.Fprintf(w, "unknown snapshot format version %d\n", version)
		return
	}
	rest := data[hdrLen:]
	var n uint64
	for {
		size, k := binary.Uvarint(rest)
		if k <= 0 {
			fmt.Fprintf(w, "truncated or damaged at record %d (position %d)\n", n, len(data)-len(rest))
			return
		}
		rest = rest[k:]
		if size == 0 {
			break
		}
		if size > maxSnapshotRecordBytes || size > uint64(len(rest)) {
			fmt.Fprintf(w, "record %d claims %d bytes, %d remain (position %d)\n", n, size, len(rest), len(data)-len(rest))
			return
		}
		rec, err := metadata.Decode(rest[:size])
		if err != nil {
			fmt.Fprintf(w, "| <undecodable: %v>\n", err)
		} else {
			fmt.Fprintf(w, "| %s\n", metadataRecordText(rec))
		}
		rest = rest[size:]
		n++
	}
	if len(rest) < 8 {
		fmt.Fprintf(w, "the trailer with the record count is missing\n")
		return
	}
	if want := binary.BigEndian.Uint64(rest); want != n {
		fmt.Fprintf(w, "the snapshot holds %d records, its trailer says %d\n", n, want)
	} else {
		fmt.Fprintf(w, "records: %d\n", n)
	}
	if len(rest) > 8 {
		fmt.Fprintf(w, "found %d bytes after the trailer\n", len(rest)-8)
	}
}
