package mirroradmin

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestAgainstNodes runs the client against a kmirror destination node with
// another kmirror node as the source: create, list, add (the topic created
// with the source's id, partitions and configs), pause, resume, remove and
// their wrong-state errors, deletion refused while topics mirror, deletion of
// an empty mirror and reuse of its name.
func TestAgainstNodes(t *testing.T) {
	src := testcluster.Start(t)
	dst := testcluster.Start(t)
	ctx := testCtx(t)

	srcAdm := src.Admin(t)
	created, err := srcAdm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")}, "orders")
	if err != nil || created.Err != nil {
		t.Fatalf("create source topic: %v %v", err, created.Err)
	}

	adm, err := NewFromAddrs(dst.BootstrapAddrs())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()

	if err := adm.CreateMirror(ctx, "east", map[string]string{"bootstrap.servers": src.Bootstrap(), "client.id": "east"}); err != nil {
		t.Fatal(err)
	}
	err = adm.CreateMirror(ctx, "east", map[string]string{"bootstrap.servers": src.Bootstrap()})
	var ae *Error
	if !errors.Is(err, kerr.DuplicateResource) || !errors.As(err, &ae) || !strings.Contains(ae.Message, `"east" already exists`) {
		t.Fatalf("create twice: %v", err)
	}
	if err := adm.ValidateCreateMirror(ctx, "bad", map[string]string{"bootstrap.servers": src.Bootstrap(), "sasl.pasword": "x"}); !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), "sasl.pasword") {
		t.Fatalf("unknown property: %v", err)
	}
	ls, err := adm.ListMirrors(ctx)
	if err != nil || len(ls) != 1 || ls[0].Name != "east" || ls[0].SourceBootstrapServers != src.Bootstrap() || ls[0].TopicCount != 0 {
		t.Fatalf("list: %+v %v", ls, err)
	}

	rs, err := adm.AddTopics(ctx, "east", "orders", "missing")
	if err != nil {
		t.Fatal(err)
	}
	orders, _ := rs.On("orders")
	missing, _ := rs.On("missing")
	if orders.Err != nil || [16]byte(orders.ID) != created.ID {
		t.Fatalf("orders: %+v, source id %x", orders, created.ID)
	}
	if !errors.Is(missing.Err, kerr.UnknownTopicOrPartition) || !strings.Contains(missing.Err.Error(), "does not exist on the source cluster") {
		t.Fatalf("missing: %v", missing.Err)
	}
	dstAdm := dst.Admin(t)
	md, err := dstAdm.Metadata(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if td := md.Topics["orders"]; td.Err != nil || td.ID != created.ID || len(td.Partitions) != 3 {
		t.Fatalf("destination orders: %+v", td)
	}
	rc, err := dstAdm.DescribeTopicConfigs(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := rc.On("orders", nil); err != nil || !hasConfig(c, "retention.ms", "3600000") {
		t.Fatalf("destination configs: %+v %v", c, err)
	}
	if ls, _ := adm.ListMirrors(ctx); len(ls) != 1 || ls[0].TopicCount != 1 {
		t.Fatalf("list after add: %+v", ls)
	}

	must := func(what string, rs TopicResults, err error, want *kerr.Error, msgPart string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got := rs.Error()
		if want == nil {
			if got != nil {
				t.Fatalf("%s: %v", what, got)
			}
			return
		}
		if !errors.Is(got, want) || !strings.Contains(got.Error(), msgPart) {
			t.Fatalf("%s: %v, want %v containing %q", what, got, want, msgPart)
		}
	}
	rs, err = adm.ResumeTopics(ctx, "east", "orders")
	must("resume mirroring", rs, err, kerr.InvalidRequest, "only PAUSED topics can be resumed")
	rs, err = adm.PauseTopics(ctx, "east", "orders")
	must("pause", rs, err, nil, "")
	rs, err = adm.PauseTopics(ctx, "east", "orders")
	must("pause paused", rs, err, kerr.InvalidRequest, `topic "orders" is PAUSED`)
	rs, err = adm.ResumeTopics(ctx, "east", "orders")
	must("resume", rs, err, nil, "")

	err = adm.DeleteMirror(ctx, "east")
	if !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(err.Error(), `"orders" (MIRRORING)`) {
		t.Fatalf("delete with a mirroring topic: %v", err)
	}
	rs, err = adm.Failover(ctx, "east", "orders")
	must("failover", rs, err, nil, "")
	rs, err = adm.RemoveTopics(ctx, "east", "orders")
	must("remove removed", rs, err, kerr.InvalidRequest, "REMOVED")
	_, err = adm.PauseTopics(ctx, "nope", "orders")
	if !errors.Is(err, kerr.ResourceNotFound) {
		t.Fatalf("unknown mirror: %v", err)
	}

	// An empty mirror is deleted and its name reused.
	if err := adm.CreateMirror(ctx, "west", map[string]string{"bootstrap.servers": src.Bootstrap()}); err != nil {
		t.Fatal(err)
	}
	if err := adm.DeleteMirror(ctx, "west"); err != nil {
		t.Fatal(err)
	}
	if ls, _ := adm.ListMirrors(ctx); len(ls) != 1 || ls[0].Name != "east" {
		t.Fatalf("list after delete: %+v", ls)
	}
	if err := adm.DeleteMirror(ctx, "west"); !errors.Is(err, kerr.ResourceNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	if err := adm.CreateMirror(ctx, "west", map[string]string{"bootstrap.servers": "other:9092"}); err != nil {
		t.Fatalf("reuse the name: %v", err)
	}
}

func hasConfig(rc kadm.ResourceConfig, name, value string) bool {
	for _, c := range rc.Configs {
		if c.Key == name && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}

// TestEveryBrokerForwards sends the mirror admin writes to each broker of a
// three-node cluster directly: each forwards to the active controller and
// answers once its own metadata shows the change, so that ListMirrors on the
// same broker right after sees it.
func TestEveryBrokerForwards(t *testing.T) {
	src := testcluster.Start(t)
	dst := testcluster.Start(t, testcluster.Nodes(3))
	ctx := testCtx(t)
	if _, err := src.Admin(t).CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	cl := dst.Client(t, ClientOpts()...)
	for _, n := range dst.Nodes() {
		b := cl.Broker(int(n.ID))
		name := "m" + strconv.Itoa(int(n.ID))
		create := &wire.CreateMirrorRequest{MirrorName: name, TimeoutMillis: 10000,
			Configs: []wire.CreateMirrorRequestConfig{{Name: "bootstrap.servers", Value: kmsg.StringPtr(src.Bootstrap())}}}
		cr, err := create.RequestWith(ctx, b)
		if err != nil || cr.ErrorCode != 0 {
			t.Fatalf("create %s via broker %d: %v %+v", name, n.ID, err, cr)
		}
		ls, err := new(wire.ListMirrorsRequest).RequestWith(ctx, b)
		if err != nil || !slices.ContainsFunc(ls.Mirrors, func(m wire.ListMirrorsResponseMirror) bool { return m.Name == name }) {
			t.Fatalf("broker %d does not list %s right after creating it: %v %+v", n.ID, name, err, ls)
		}
	}
	// Topics: add through node 2, pause through node 3; each answers after
	// its own metadata has the new mirror.name.
	add := &wire.AddTopicsToMirrorRequest{MirrorName: "m1", TimeoutMillis: 10000, Topics: []wire.MirrorTopicsRequestTopic{{Name: "orders"}}}
	ar, err := add.RequestWith(ctx, cl.Broker(2))
	if err != nil || ar.ErrorCode != 0 || ar.Topics[0].ErrorCode != 0 {
		t.Fatalf("add via broker 2: %v %+v", err, ar)
	}
	ls, err := new(wire.ListMirrorsRequest).RequestWith(ctx, cl.Broker(2))
	if err != nil || ls.Mirrors[0].Name != "m1" || ls.Mirrors[0].TopicCount != 1 {
		t.Fatalf("list via broker 2 after add: %v %+v", err, ls)
	}
	pause := &wire.PauseMirrorTopicsRequest{MirrorName: "m1", TimeoutMillis: 10000, Topics: []wire.MirrorTopicsRequestTopic{{Name: "orders"}}}
	pr, err := pause.RequestWith(ctx, cl.Broker(3))
	if err != nil || pr.Topics[0].ErrorCode != 0 {
		t.Fatalf("pause via broker 3: %v %+v", err, pr)
	}
	del := &wire.DeleteMirrorRequest{MirrorName: "m3", TimeoutMillis: 10000}
	if dr, err := del.RequestWith(ctx, cl.Broker(1)); err != nil || dr.ErrorCode != 0 {
		t.Fatalf("delete via broker 1: %v %+v", err, dr)
	}
	if ls, err := new(wire.ListMirrorsRequest).RequestWith(ctx, cl.Broker(1)); err != nil || len(ls.Mirrors) != 2 {
		t.Fatalf("list via broker 1 after delete: %v %+v", err, ls)
	}
}
