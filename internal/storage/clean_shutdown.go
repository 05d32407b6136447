package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The clean-shutdown marker .kafka_cleanshutdown sits in a log directory
// whose logs were all closed cleanly. Like Kafka (KIP-966) it holds JSON
// {"version":0,"brokerEpoch":N}, the broker epoch of the run that wrote it
// (-1 if unknown). Its presence at start-up means the files are trusted; it
// is removed before the logs are loaded, so a crash during loading means an
// unclean start next time.

type cleanShutdownFile struct {
	Version     int   `json:"version"`
	BrokerEpoch int64 `json:"brokerEpoch"`
}

// readCleanShutdownMarker reports whether dir has the marker and the broker
// epoch in it (-1 if absent or unreadable; an unreadable marker still counts
// as present, as Kafka treats it).
func readCleanShutdownMarker(dir string) (present bool, brokerEpoch int64, err error) {
	data, err := os.ReadFile(filepath.Join(dir, CleanShutdownFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, -1, nil
	}
	if err != nil {
		return false, -1, err
	}
	var c cleanShutdownFile
	if json.Unmarshal(data, &c) != nil || c.Version != 0 {
		return true, -1, nil
	}
	return true, c.BrokerEpoch, nil
}

func writeCleanShutdownMarker(dir string, brokerEpoch int64) error {
	data, err := json.Marshal(cleanShutdownFile{Version: 0, BrokerEpoch: brokerEpoch})
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, CleanShutdownFileName), data); err != nil {
		return fmt.Errorf("write clean shutdown marker in %s: %w", dir, err)
	}
	return nil
}

func removeCleanShutdownMarker(dir string) error {
	if err := removeIfExists(filepath.Join(dir, CleanShutdownFileName)); err != nil {
		return err
	}
	return syncDir(dir)
}
