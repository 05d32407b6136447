package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// TestDumpLogDecodersOnANodesFiles decodes what a running node wrote: the
// __consumer_offsets segment after a consumer group committed, the
// __transaction_state segment after a committed transaction, the
// __mirror_state segment of a mirror (its source a kfake cluster), and the
// metadata log (raft.db, read from a copy as the node holds it, and a
// snapshot), with a SCRAM credential's salt and keys and a mirror's
// password redacted.
func TestDumpLogDecodersOnANodesFiles(t *testing.T) {
	c := testcluster.Start(t,
		testcluster.Config("offsets.topic.num.partitions", "1"),
		testcluster.Config("offsets.topic.replication.factor", "1"),
		testcluster.Config("transaction.state.log.num.partitions", "1"),
		testcluster.Config("transaction.state.log.replication.factor", "1"),
		testcluster.Config("transaction.state.log.min.isr", "1"),
		testcluster.Config("mirror.state.topic.num.partitions", "1"),
		testcluster.Config("mirror.state.topic.replication.factor", "1"),
		testcluster.Config("group.initial.rebalance.delay.ms", "0"),
		testcluster.Config("mirror.metadata.refresh.interval.ms", "1000"),
		testcluster.Config("metrics.listener", ""),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := c.Admin(t)
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil || r.Err != nil {
		t.Fatalf("create orders: %v %v", err, r.Err)
	}
	prod := c.Client(t, kgo.DefaultProduceTopic("orders"))
	for i := range 3 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte{byte('a' + i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()

	// A consumer group joins, reads the three records and commits.
	cons := c.Client(t, kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < 3; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	cons.Close()

	// A committed transaction.
	tx := c.Client(t, kgo.TransactionalID("tx-1"), kgo.DefaultProduceTopic("orders"))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Value: []byte("in-txn")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	tx.Close()

	// A mirror of a kfake topic, and one with a password that is never
	// used (no topics).
	src := startCluster(t)
	srcCl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(src, ",")...), kgo.DefaultProduceTopic("remote"))
	if err != nil {
		t.Fatal(err)
	}
	defer srcCl.Close()
	if r, err := kadm.NewClient(srcCl).CreateTopic(ctx, 1, 1, nil, "remote"); err != nil || r.Err != nil {
		t.Fatalf("create remote on kfake: %v %v", err, r.Err)
	}
	if err := srcCl.ProduceSync(ctx, &kgo.Record{Value: []byte("r")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	madm, err := mirroradmin.NewFromAddrs(c.BootstrapAddrs())
	if err != nil {
		t.Fatal(err)
	}
	defer madm.Close()
	if err := madm.CreateMirror(ctx, "m", map[string]string{"bootstrap.servers": src}); err != nil {
		t.Fatal(err)
	}
	const mirrorSecret = "hunter2-mirror-secret"
	if err := madm.CreateMirror(ctx, "secured", map[string]string{"bootstrap.servers": src, "security.protocol": "SASL_PLAINTEXT",
		"sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": mirrorSecret}); err != nil {
		t.Fatal(err)
	}
	if rs, err := madm.AddTopics(ctx, "m", "remote"); err != nil || rs.Error() != nil {
		t.Fatalf("add remote: %v %v", err, rs.Error())
	}
	for {
		ms, err := madm.DescribeMirrors(ctx, "m")
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ms.On("m")
		if len(m.Topics) == 1 && len(m.Topics[0].Partitions) == 1 && m.Topics[0].Partitions[0].State == mirroradmin.StateMirroring {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the mirrored partition never reached MIRRORING")
		}
		time.Sleep(20 * time.Millisecond) // polling DescribeMirrors; there is no event to wait on
	}

	// A SCRAM credential with a known salt, and a metadata snapshot.
	salt := []byte("known-salt-of-the-test")
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096,
		Salt: salt, SaltedPassword: bytes.Repeat([]byte{7}, 32)}}); err != nil {
		t.Fatal(err)
	}
	node := c.Nodes()[0]
	if err := node.Server().Quorum().Snapshot(); err != nil {
		t.Fatal(err)
	}

	data := filepath.Join(node.Dir, "data")
	expect := func(out string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %s\n%s", w, out)
			}
		}
	}
	dump := func(args ...string) string {
		t.Helper()
		out, err := runDumpLog(t, args...)
		if err != nil {
			t.Fatalf("dump-log %v: %v\n%s", args, err, out)
		}
		return out
	}
	seg := "00000000000000000000.log"

	out := dump("--print-data", filepath.Join(data, "__consumer_offsets-0", seg))
	expect(out,
		`key: {"type":"offset_commit","version":1,"group":"billing","topic":"orders","partition":0} payload: {"version":3,"offset":3,`,
		`key: {"type":"group_metadata","version":2,"group":"billing"} payload: {"version":`,
		`"protocolType":"consumer"`,
		`"subscription":["orders"],"assignment":["orders:0"]`,
	)

	out = dump("--print-data", filepath.Join(data, "__transaction_state-0", seg))
	expect(out,
		`key: {"type":"transaction_metadata","version":0,"transactionalId":"tx-1"}`,
		`"state":"Ongoing","topicPartitions":[{"topic":"orders","partitions":[0]}]`,
		`"state":"PrepareCommit"`,
		`"state":"CompleteCommit","topicPartitions":[]`,
	)
	// The same bytes as another topic's: --transaction-log-decoder alone
	// implies --print-data.
	out = dump("--transaction-log-decoder", filepath.Join(data, "__transaction_state-0", seg))
	expect(out, `"transactionalId":"tx-1"`)

	out = dump("--print-data", filepath.Join(data, "__mirror_state-0", seg))
	expect(out, "key: MirrorPartitionState{mirror=m, topicId=", "payload: {state=MIRRORING")

	out = dump(filepath.Join(data, "__cluster_metadata-0"))
	expect(out,
		"(a running node holds ", "Raft log: firstIndex: ",
		`| {"type":"TopicRecord","version":0,"data":{"Name":"orders","ID":"`,
		`"type":"RegisterBrokerRecord"`,
		`"type":"UserScramCredentialRecord","version":0,"data":{"Name":"alice","Mechanism":1,"Salt":"<redacted 22 bytes>"`,
		`"ResourceName":"secured","Name":"sasl.password","Value":"<redacted>"`,
		`"ResourceName":"m","Name":"bootstrap.servers","Value":"`+src+`"`,
		"snapshot: id: ", "version: 1 appliedIndex: ", "records: ",
	)
	for _, secret := range []string{mirrorSecret, string(salt), base64.StdEncoding.EncodeToString(salt)} {
		if strings.Contains(out, secret) {
			t.Errorf("the metadata dump shows a secret %q", secret)
		}
	}
}
