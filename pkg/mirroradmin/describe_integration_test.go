package mirroradmin

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestDescribeAgainstNode describes a mirror of a kfake source through a
// kmirror node: the properties with the secret hidden, the topic with its
// source id, and every partition reaching MIRRORING with the source's
// records copied (lag 0).
func TestDescribeAgainstNode(t *testing.T) {
	const secret = "planted-describe-pw"
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	pcl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	ctx := testCtx(t)
	for i := 0; i < 10; i++ {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Value: []byte("v"), Partition: int32(i % 2)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	dst := testcluster.Start(t)
	adm, err := NewFromAddrs(dst.BootstrapAddrs())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateMirror(ctx, "east", map[string]string{"bootstrap.servers": strings.Join(src.ListenAddrs(), ","), "sasl.password": secret}); err != nil {
		t.Fatal(err)
	}
	rs, err := adm.AddTopics(ctx, "east", "orders")
	if err != nil || rs.Error() != nil {
		t.Fatalf("add: %v %v", err, rs.Error())
	}

	deadline := time.Now().Add(30 * time.Second)
	var last Mirror
	for {
		ms, err := adm.DescribeMirrors(ctx, "east")
		if err != nil {
			t.Fatal(err)
		}
		m, ok := ms.On("east")
		if !ok || m.Err != nil {
			t.Fatalf("describe: %+v", ms)
		}
		last = m
		if caughtUp(m) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the partitions did not reach MIRRORING with lag 0: %+v", last.Topics)
		}
		time.Sleep(50 * time.Millisecond) // polling the data plane's progress; no event to wait on from a client
	}
	var sawSecret bool
	for _, c := range last.Configs {
		if c.Name == "sasl.password" {
			sawSecret = true
			if !c.Sensitive || c.Value != nil {
				t.Fatalf("the secret is returned: %+v", c)
			}
		}
	}
	if !sawSecret {
		t.Fatalf("configs %+v lack sasl.password", last.Configs)
	}
	if len(last.Topics) != 1 || last.Topics[0].ID != rs[0].ID || last.Topics[0].MirrorNameConfig != "east" {
		t.Fatalf("topics %+v", last.Topics)
	}
}

// caughtUp reports whether every partition of m is MIRRORING with the
// source's 5 records and lag 0.
func caughtUp(m Mirror) bool {
	if len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 2 {
		return false
	}
	for _, p := range m.Topics[0].Partitions {
		if p.State != StateMirroring || p.Lag != 0 || p.DestinationLogEndOffset != 5 {
			return false
		}
	}
	return true
}
