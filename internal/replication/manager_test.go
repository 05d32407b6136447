package replication

import "testing"

func TestNewManagerValidates(t *testing.T) {
	if _, err := NewManager(Config{}); err == nil {
		t.Fatal("a manager without NewEndpoint was accepted")
	}
	if _, err := NewManager(Config{NewEndpoint: (&rig{}).dialNothing, FetchVersion: 11}); err == nil {
		t.Fatal("Fetch v11 (no LastFetchedEpoch) was accepted")
	}
	m, err := NewManager(Config{NewEndpoint: (&rig{}).dialNothing})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if err := m.AddPartitions(AddPartition{TopicPartition: tpX0, Target: &memTarget{}}); err == nil {
		t.Fatal("a closed manager accepted a partition")
	}
}
