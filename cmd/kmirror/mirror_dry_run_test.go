package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// TestFailoverDryRun mirrors a topic whose source has an open transaction
// and runs remove-topics --dry-run: it reports, per partition, where the
// failover would cut the log (the open transaction's first offset), how
// many records that drops and the lag, in a table and in JSON, and
// changes nothing (the topic stays MIRRORING); a topic that cannot be
// failed over is an error row and a failing exit.
func TestFailoverDryRun(t *testing.T) {
	src := testcluster.Start(t)
	dst := startNode(t, testcluster.Config("mirror.metadata.refresh.interval.ms", "1000"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := src.Admin(t).CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	p := src.Client(t, kgo.DefaultProduceTopic("orders"))
	for i := range 5 {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	tx := src.Client(t, kgo.DefaultProduceTopic("orders"), kgo.TransactionalID("dry-tx"), kgo.TransactionTimeout(time.Minute))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := tx.ProduceSync(ctx, &kgo.Record{Value: []byte("open")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ok := func(args ...string) cliResult {
		t.Helper()
		r := runMirrorCLI(t, append(args, "--bootstrap-server", dst)...)
		if r.err != nil {
			t.Fatalf("mirror %v: %v\nstdout:\n%s\nstderr:\n%s", args, r.err, r.stdout, r.stderr)
		}
		return r
	}
	ok("create", "east", "--source-bootstrap", src.Bootstrap())
	ok("add-topics", "east", "orders", "--wait", "--interval", "100ms")
	adm, err := mirroradmin.NewFromAddrs(strings.Split(dst, ","))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	// The open transaction's 3 records are copied: log end 8.
	deadline := time.Now().Add(time.Minute)
	for {
		ms, err := adm.DescribeMirrors(ctx, "east")
		if m, found := ms.On("east"); err == nil && found && len(m.Topics) == 1 && m.Topics[0].Partitions[0].DestinationLogEndOffset == 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the open transaction was not copied")
		}
		time.Sleep(50 * time.Millisecond)
	}

	r := ok("remove-topics", "east", "orders", "--dry-run")
	for _, want := range []string{"TOPIC", "CUT-AT", "DROPPED", "nothing was changed (dry run)", "group offsets last synced:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry-run table lacks %q:\n%s", want, r.stdout)
		}
	}
	if !rowHas(r.stdout, "orders", "0", "MIRRORING", "8", "5", "3") {
		t.Errorf("dry-run row of orders-0 (log end 8, cut at 5, 3 dropped) missing:\n%s", r.stdout)
	}
	r = ok("remove-topics", "east", "orders", "--dry-run", "-o", "json")
	var plan mirroradmin.FailoverPlan
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("dry-run json: %v\n%s", err, r.stdout)
	}
	if len(plan.Topics) != 1 || len(plan.Topics[0].Partitions) != 1 {
		t.Fatalf("dry-run json: %+v", plan)
	}
	if pp := plan.Topics[0].Partitions[0]; pp.LogEndOffset != 8 || pp.CutOffset != 5 || pp.DroppedRecords != 3 || pp.Lag != 0 {
		t.Fatalf("dry-run json partition: %+v", pp)
	}
	// Nothing changed.
	ms, err := adm.DescribeMirrors(ctx, "east")
	if m, _ := ms.On("east"); err != nil || m.Topics[0].MirrorNameConfig != "east" || m.Topics[0].Partitions[0].State != mirroradmin.StateMirroring {
		t.Fatalf("after the dry run: %v %+v", err, m)
	}
	r = runMirrorCLI(t, "remove-topics", "east", "nope", "--dry-run", "--bootstrap-server", dst)
	if r.err == nil || !strings.Contains(r.stdout, "error:") {
		t.Fatalf("dry run of an unknown topic: %v\n%s", r.err, r.stdout)
	}
}
