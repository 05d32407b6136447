package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kmirror/kmirror/internal/storage"
)

// metaDirs returns every directory that carries a meta.properties: the log
// directories and the metadata log directory, each once.
func metaDirs(logDirs []string, metadataDir string) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range append(slices.Clone(logDirs), metadataDir) {
		key := filepath.Clean(d)
		if d == "" || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, d)
	}
	return out
}

// prepareMetaProperties decides the node's cluster id and makes sure every
// directory holds a meta.properties that says it belongs to this cluster and
// node.
//
// Directories that have one must all agree on the cluster id and carry this
// node's id, else start-up stops with an error naming them: a directory of
// another cluster or node would otherwise be served as if it were ours.
// Directories without one (first start, or a directory added later) get one
// with the agreed cluster id and a fresh directory id.
//
// The cluster id comes from the existing files; with none, from want (the
// --cluster-id every node of a multi-node cluster is given); with neither, a
// new one is generated in Kafka's Uuid form, which only a cluster whose
// every node generates it alone (a single node) can use.
func prepareMetaProperties(dirs []string, nodeID int32, want string, generate bool) (string, error) {
	clusterID := ""
	var found []string // "dir (cluster.id=…, node.id=…)" of every existing file, for errors
	var missing []string
	for _, d := range dirs {
		mp, err := storage.ReadMetaProperties(d)
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, d)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read meta.properties: %w", err)
		}
		desc := fmt.Sprintf("%s (cluster.id=%s, node.id=%d)", d, mp.ClusterID, mp.NodeID)
		if mp.NodeID != nodeID {
			return "", fmt.Errorf("log directory %s belongs to node %d, but node.id is %d: use the node's own directories, or set node.id to %d",
				d, mp.NodeID, nodeID, mp.NodeID)
		}
		if clusterID != "" && mp.ClusterID != clusterID {
			return "", fmt.Errorf("log directories belong to different clusters: %s and %s", strings.Join(found, ", "), desc)
		}
		clusterID = mp.ClusterID
		found = append(found, desc)
	}
	switch {
	case clusterID != "" && want != "" && want != clusterID:
		return "", fmt.Errorf("--cluster-id %s does not match the cluster id %s of the existing log directories %s", want, clusterID, strings.Join(found, ", "))
	case clusterID == "" && want != "":
		clusterID = want
	case clusterID == "" && !generate:
		return "", fmt.Errorf("the log directories have no meta.properties yet and this node is part of a multi-node cluster: "+
			"start every node of the cluster with the same --cluster-id (for example %s)", storage.NewDirectoryID())
	case clusterID == "":
		// Kafka's random Uuid form, avoiding what Kafka avoids.
		clusterID = storage.NewDirectoryID()
	}
	for _, d := range missing {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", fmt.Errorf("create log directory: %w", err)
		}
		mp := storage.MetaProperties{Version: 1, ClusterID: clusterID, NodeID: nodeID, DirectoryID: storage.NewDirectoryID()}
		if err := storage.WriteMetaProperties(d, mp); err != nil {
			return "", fmt.Errorf("write meta.properties in %s: %w", d, err)
		}
	}
	return clusterID, nil
}
