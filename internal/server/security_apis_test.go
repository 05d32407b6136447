package server

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/wire"
)

// refusalRow is what a principal without any right gets from one API when
// every name in the request is "x" (a topic, a group and a transactional
// id that exist): the error of the refused items, or for an API open to
// everyone what it answers instead.
type refusalRow struct {
	// want is the error the refused items carry at version v.
	want func(v int16) *kerr.Error
	// prep makes the filled request meaningful (a resource type, no
	// filters that would match nothing, no fetch session).
	prep func(r kmsg.Request)
	// listed returns the names a listing API lists: the principal without
	// rights must see none, a super user "x".
	listed func(r kmsg.Response) []string
	// check judges an open API's answer ("" when right).
	check func(v int16, r kmsg.Response) string
	// connection marks the APIs a connection answers itself (ApiVersions
	// and SASL), outside the handlers' authorization.
	connection bool
}

func refusedWith(err *kerr.Error) func(int16) *kerr.Error {
	return func(int16) *kerr.Error { return err }
}

var (
	topicRefused   = refusedWith(kerr.TopicAuthorizationFailed)
	groupRefused   = refusedWith(kerr.GroupAuthorizationFailed)
	txnRefused     = refusedWith(kerr.TransactionalIDAuthorizationFailed)
	clusterRefused = refusedWith(kerr.ClusterAuthorizationFailed)
)

// refusalRows has a row for every API a client listener serves; the test
// fails for a served API without one, so that a new API is not served
// without deciding who may call it.
var refusalRows = map[int16]refusalRow{
	int16(kmsg.Produce): {want: topicRefused},
	int16(kmsg.Fetch): {want: topicRefused, prep: func(r kmsg.Request) {
		f := r.(*kmsg.FetchRequest)
		f.SessionID, f.SessionEpoch = 0, -1
	}},
	int16(kmsg.ListOffsets): {want: topicRefused, prep: func(r kmsg.Request) {
		r.(*kmsg.ListOffsetsRequest).ReplicaID = -1
	}},
	int16(kmsg.Metadata):        {want: topicRefused},
	int16(kmsg.OffsetCommit):    {want: groupRefused},
	int16(kmsg.OffsetFetch):     {want: groupRefused},
	int16(kmsg.FindCoordinator): {want: groupRefused, prep: func(r kmsg.Request) { r.(*kmsg.FindCoordinatorRequest).CoordinatorType = 0 }},
	int16(kmsg.JoinGroup):       {want: groupRefused},
	int16(kmsg.Heartbeat):       {want: groupRefused},
	int16(kmsg.LeaveGroup):      {want: groupRefused},
	int16(kmsg.SyncGroup):       {want: groupRefused},
	int16(kmsg.DescribeGroups):  {want: groupRefused},
	int16(kmsg.ListGroups): {
		prep: func(r kmsg.Request) {
			l := r.(*kmsg.ListGroupsRequest)
			l.StatesFilter, l.TypesFilter = nil, nil
		},
		listed: func(r kmsg.Response) []string {
			var out []string
			for _, g := range r.(*kmsg.ListGroupsResponse).Groups {
				out = append(out, g.Group)
			}
			return out
		},
	},
	int16(kmsg.SASLHandshake): {connection: true},
	int16(kmsg.ApiVersions):   {connection: true},
	int16(kmsg.CreateTopics):  {want: topicRefused},
	int16(kmsg.DeleteTopics): {want: topicRefused, prep: func(r kmsg.Request) {
		for i := range r.(*kmsg.DeleteTopicsRequest).Topics {
			r.(*kmsg.DeleteTopicsRequest).Topics[i].TopicID = [16]byte{}
		}
	}},
	int16(kmsg.DeleteRecords):  {want: topicRefused},
	int16(kmsg.InitProducerID): {want: txnRefused},
	int16(kmsg.OffsetForLeaderEpoch): {want: topicRefused, prep: func(r kmsg.Request) {
		r.(*kmsg.OffsetForLeaderEpochRequest).ReplicaID = -1
	}},
	int16(kmsg.AddPartitionsToTxn): {want: func(v int16) *kerr.Error {
		if v >= 4 {
			return kerr.ClusterAuthorizationFailed // a broker's request
		}
		return kerr.TransactionalIDAuthorizationFailed
	}},
	int16(kmsg.AddOffsetsToTxn): {want: txnRefused},
	int16(kmsg.EndTxn):          {want: txnRefused},
	int16(kmsg.WriteTxnMarkers): {want: clusterRefused},
	int16(kmsg.TxnOffsetCommit): {want: txnRefused},
	int16(kmsg.DescribeACLs):    {want: clusterRefused},
	int16(kmsg.CreateACLs):      {want: clusterRefused},
	int16(kmsg.DeleteACLs):      {want: clusterRefused},
	int16(kmsg.DescribeConfigs): {want: topicRefused, prep: func(r kmsg.Request) {
		for i := range r.(*kmsg.DescribeConfigsRequest).Resources {
			r.(*kmsg.DescribeConfigsRequest).Resources[i].ResourceType = kmsg.ConfigResourceTypeTopic
		}
	}},
	int16(kmsg.AlterConfigs): {want: topicRefused, prep: func(r kmsg.Request) {
		for i := range r.(*kmsg.AlterConfigsRequest).Resources {
			r.(*kmsg.AlterConfigsRequest).Resources[i].ResourceType = kmsg.ConfigResourceTypeTopic
		}
	}},
	int16(kmsg.DescribeLogDirs): {check: func(v int16, r kmsg.Response) string {
		d := r.(*kmsg.DescribeLogDirsResponse)
		// v0-v2 have no error field: the answer is empty.
		if v >= 3 && d.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(d.Dirs) != 0 {
			return "log dirs described"
		}
		return ""
	}},
	int16(kmsg.SASLAuthenticate):           {connection: true},
	int16(kmsg.CreatePartitions):           {want: topicRefused},
	int16(kmsg.DeleteGroups):               {want: groupRefused},
	int16(kmsg.ElectLeaders):               {want: clusterRefused},
	int16(kmsg.AlterPartitionAssignments):  {want: clusterRefused},
	int16(kmsg.ListPartitionReassignments): {want: clusterRefused},
	int16(kmsg.DescribeQuorum):             {want: clusterRefused},
	int16(kmsg.DescribeClientQuotas):       {want: clusterRefused},
	int16(kmsg.AlterClientQuotas):          {want: clusterRefused},
	int16(kmsg.IncrementalAlterConfigs): {want: topicRefused, prep: func(r kmsg.Request) {
		for i := range r.(*kmsg.IncrementalAlterConfigsRequest).Resources {
			r.(*kmsg.IncrementalAlterConfigsRequest).Resources[i].ResourceType = kmsg.ConfigResourceTypeTopic
		}
	}},
	int16(kmsg.OffsetDelete):                 {want: groupRefused},
	int16(kmsg.DescribeUserSCRAMCredentials): {want: clusterRefused},
	int16(kmsg.AlterUserSCRAMCredentials):    {want: clusterRefused},
	int16(kmsg.DescribeCluster): {
		prep: func(r kmsg.Request) { r.(*kmsg.DescribeClusterRequest).IncludeClusterAuthorizedOperations = true },
		check: func(_ int16, r kmsg.Response) string {
			d := r.(*kmsg.DescribeClusterResponse)
			if d.ErrorCode != 0 || d.ClusterAuthorizedOperations != 0 || len(d.Brokers) == 0 {
				return "want the brokers, and no authorized operations"
			}
			return ""
		},
	},
	int16(kmsg.DescribeProducers):    {want: topicRefused},
	int16(kmsg.DescribeTransactions): {want: txnRefused},
	int16(kmsg.ListTransactions): {
		prep: func(r kmsg.Request) {
			l := r.(*kmsg.ListTransactionsRequest)
			l.StateFilters, l.ProducerIDFilters, l.DurationFilterMillis = nil, nil, -1
		},
		listed: func(r kmsg.Response) []string {
			var out []string
			for _, s := range r.(*kmsg.ListTransactionsResponse).TransactionStates {
				out = append(out, s.TransactionalID)
			}
			return out
		},
	},
	wire.KeyCreateMirror:           {want: clusterRefused},
	wire.KeyAddTopicsToMirror:      {want: clusterRefused},
	wire.KeyRemoveTopicsFromMirror: {want: clusterRefused},
	wire.KeyDeleteMirror:           {want: clusterRefused},
	wire.KeyListMirrors:            {want: clusterRefused},
	wire.KeyDescribeMirrors:        {want: clusterRefused},
	wire.KeyReadMirrorStates:       {want: clusterRefused},
	wire.KeyWriteMirrorStates:      {want: clusterRefused},
	wire.KeyPauseMirrorTopics:      {want: clusterRefused},
	wire.KeyResumeMirrorTopics:     {want: clusterRefused},
	wire.KeyReadLastMirroredEpochs: {want: clusterRefused},
}

// TestEveryAPIRefusedWithoutRights sends every API a client listener
// serves, at every served version, as a principal without any ACL, naming
// a topic, a group and a transactional id that exist, and expects each
// API's authorization error (TOPIC_, GROUP_, TRANSACTIONAL_ID_ or
// CLUSTER_AUTHORIZATION_FAILED) or, for the open APIs, an answer that
// shows nothing: listings without the resources (which a super user sees),
// DescribeCluster without authorized operations. The rows come from the
// served registry, so a new API without a row fails; every served API must
// also be in auth's table. On the controller listener every API needs
// CLUSTER_ACTION.
func TestEveryAPIRefusedWithoutRights(t *testing.T) {
	n := startSecureNode(t, "SASL_PLAINTEXT", "PLAINTEXT", saslProps())
	ctx := ctxFor(t, 120*time.Second)
	adminAuth := plain.Auth{User: "admin", Pass: adminPassword}.AsMechanism()
	adm := kadm.NewClient(n.client(t, nil, adminAuth))
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "x"); err != nil || r.Err != nil {
		t.Fatalf("create x: %v %v", err, r.Err)
	}
	// A committed transaction "x" and a group "x" with an offset.
	txp := n.client(t, nil, adminAuth, kgo.TransactionalID("x"), kgo.DefaultProduceTopic("x"))
	if err := txp.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txp.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("transactional produce: %v", err)
	}
	if err := txp.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "x", Partition: 0, At: 1, LeaderEpoch: -1})
	waitFor(t, "group x's commit", func() bool {
		r, err := adm.CommitOffsets(ctx, "x", offsets)
		return err == nil && r.Error() == nil
	})
	topics, err := adm.ListTopics(ctx, "x")
	if err != nil || topics["x"].Err != nil {
		t.Fatalf("topic x: %v", err)
	}
	xID := [16]byte(topics["x"].ID)

	alice, err := wire.Dial(ctx, "tcp", n.addr(), "alice", wire.WithSASL(plain.Auth{User: "alice", Pass: alicePassword}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	admin, err := wire.Dial(ctx, "tcp", n.addr(), "admin", wire.WithSASL(adminAuth))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	checked := 0
	for _, vr := range n.net.listener("CLIENT").ep.reg.Keys() {
		name := wire.APIName(vr.Key)
		if _, ok := auth.RequiredFor(vr.Key); !ok {
			t.Errorf("CLIENT serves %s, which auth's table does not know", name)
		}
		row, ok := refusalRows[vr.Key]
		if !ok {
			t.Errorf("CLIENT serves %s (key %d) without a row in refusalRows: decide what a principal without rights gets", name, vr.Key)
			continue
		}
		if row.connection {
			continue
		}
		for v := vr.Min; v <= vr.Max; v++ {
			req := wire.NewRegistry().NewRequest(vr.Key)
			fillNamed(reflect.ValueOf(req).Elem(), 0, "x", xID)
			req.SetVersion(v)
			if row.prep != nil {
				row.prep(req)
			}
			resp, err := alice.Request(ctx, req)
			if err != nil {
				t.Fatalf("%s v%d: %v", name, v, err)
			}
			checked++
			switch {
			case row.want != nil:
				if want := row.want(v); countCode(reflect.ValueOf(resp), want.Code) == 0 {
					t.Errorf("%s v%d: no %s in %+v", name, v, want.Message, resp)
				}
			case row.check != nil:
				if msg := row.check(v, resp); msg != "" {
					t.Errorf("%s v%d: %s: %+v", name, v, msg, resp)
				}
			case row.listed != nil:
				if got := row.listed(resp); slices.Contains(got, "x") {
					t.Errorf("%s v%d lists x to a principal without rights: %v", name, v, got)
				}
				// The listing is not empty for want of the resource.
				waitFor(t, name+" lists x to a super user", func() bool {
					r, err := admin.Request(ctx, req)
					return err == nil && slices.Contains(row.listed(r), "x")
				})
			default:
				t.Fatalf("%s: a row with nothing to check", name)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d key/versions checked on CLIENT", checked)
	}

	// The controller listener: CLUSTER_ACTION for everything.
	anon, err := wire.Dial(ctx, "tcp", n.Addr("CONTROLLER").String(), "anonymous")
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	checked = 0
	for _, vr := range n.net.listener("CONTROLLER").ep.reg.Keys() {
		if slices.Contains(auth.PreAuthenticationAPIs, vr.Key) {
			continue
		}
		if _, ok := auth.RequiredFor(vr.Key); !ok {
			t.Errorf("CONTROLLER serves %s, which auth's table does not know", wire.APIName(vr.Key))
		}
		for v := vr.Min; v <= vr.Max; v++ {
			req := wire.NewRegistry().NewRequest(vr.Key)
			fillNamed(reflect.ValueOf(req).Elem(), 0, "x", xID)
			req.SetVersion(v)
			resp, err := anon.Request(ctx, req)
			if err != nil {
				t.Fatalf("CONTROLLER %s v%d: %v", wire.APIName(vr.Key), v, err)
			}
			if countCode(reflect.ValueOf(resp), kerr.ClusterAuthorizationFailed.Code) == 0 && !(vr.Key == int16(kmsg.DescribeLogDirs) && v < 3) {
				t.Errorf("CONTROLLER %s v%d: no CLUSTER_AUTHORIZATION_FAILED in %+v", wire.APIName(vr.Key), v, resp)
			}
			checked++
		}
	}
	if checked < 5 {
		t.Fatalf("only %d key/versions checked on CONTROLLER", checked)
	}
}

// fillNamed gives a request one item in every array, name in every string
// (nullable ones included), id in every topic id, and 1 in every number,
// so that each response has items to refuse.
func fillNamed(v reflect.Value, depth int, name string, id [16]byte) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(name)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Array:
		if v.Type() == reflect.TypeOf(id) {
			v.Set(reflect.ValueOf(id))
		}
	case reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.String {
			s := name
			v.Set(reflect.ValueOf(&s))
		}
	case reflect.Slice:
		if depth > 3 || v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillNamed(s.Index(0), depth+1, name, id)
		v.Set(s)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && f.Name != "Version" && f.Name != "UnknownTags" {
				fillNamed(v.Field(i), depth, name, id)
			}
		}
	}
}

// TestClientWithACLs runs a SASL client whose rights are ACLs, not a super
// user's: it produces (idempotently) to a topic it may WRITE, consumes it
// in a group it may READ and commits, then copies it exactly once to
// another topic in transactions (a group transact session: InitProducerId,
// AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn), and reads
// the copy read-committed; a topic it has no ACL on stays refused.
func TestClientWithACLs(t *testing.T) {
	n := startSecureNode(t, "SASL_PLAINTEXT", "PLAINTEXT", saslProps())
	ctx := ctxFor(t, 120*time.Second)
	adm := kadm.NewClient(n.client(t, nil, plain.Auth{User: "admin", Pass: adminPassword}.AsMechanism()))
	for _, topic := range []string{"orders", "copies", "secret"} {
		if r, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
	}
	alice := func(b *kadm.ACLBuilder) *kadm.ACLBuilder {
		return b.Allow("User:alice").AllowHosts("*").ResourcePatternType(kadm.ACLPatternLiteral)
	}
	for _, b := range []*kadm.ACLBuilder{
		alice(kadm.NewACLs().Topics("orders", "copies").Operations(kadm.OpWrite, kadm.OpRead)),
		alice(kadm.NewACLs().Groups("readers", "copier").Operations(kadm.OpRead)),
		alice(kadm.NewACLs().TransactionalIDs("copier-tx").Operations(kadm.OpWrite)),
	} {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("create ACL: %v", r.Err)
			}
		}
	}
	auth := plain.Auth{User: "alice", Pass: alicePassword}.AsMechanism()
	base := []kgo.Opt{kgo.SeedBrokers(n.addr()), kgo.SASL(auth), kgo.RetryTimeout(10 * time.Second)}
	producer := n.client(t, nil, auth)
	waitFor(t, "alice's ACLs reach the broker", func() bool {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return producer.ProduceSync(pctx, &kgo.Record{Topic: "orders", Value: []byte("0")}).FirstErr() == nil
	})
	const total = 60
	var recs []*kgo.Record
	for i := 1; i < total; i++ {
		recs = append(recs, &kgo.Record{Topic: "orders", Value: []byte(strconv.Itoa(i))})
	}
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("idempotent produce: %v", err)
	}
	if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "secret", Value: []byte("no")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to a topic without ACLs: %v", err)
	}

	// A group consumer, committing.
	consumer, err := kgo.NewClient(append(base, kgo.ConsumerGroup("readers"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())...)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]bool{}
	for len(seen) < total {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group consumer read %d of %d", len(seen), total)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("group fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("group commit: %v", err)
	}
	committed, err := adm.FetchOffsets(ctx, "readers")
	if err != nil || committed.Error() != nil {
		t.Fatalf("fetch the group's offsets: %v", err)
	}
	var sum int64
	committed.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != total {
		t.Fatalf("group committed offsets summing to %d, want %d", sum, total)
	}

	// Exactly-once copy in transactions.
	sess, err := kgo.NewGroupTransactSession(append(base, kgo.TransactionalID("copier-tx"), kgo.ConsumerGroup("copier"),
		kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	copied := 0
	for copied < total {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("copied %d of %d", copied, total)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("copier fetch %s-%d: %v", topic, p, err) })
		if err := sess.Begin(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		batch := 0
		fs.EachRecord(func(r *kgo.Record) {
			batch++
			sess.Produce(ctx, &kgo.Record{Topic: "copies", Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("transactional produce: %v", err)
				}
			})
		})
		ok, err := sess.End(ctx, kgo.TryCommit)
		if err != nil || !ok {
			t.Fatalf("end transaction: committed %v, %v", ok, err)
		}
		copied += batch
	}
	reader := n.client(t, nil, auth, kgo.ConsumeTopics("copies"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := map[string]bool{}
	for len(got) < total {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d copies", len(got), total)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("read copies: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if got[string(r.Value)] {
				t.Fatalf("copy %s read twice", r.Value)
			}
			got[string(r.Value)] = true
		})
	}
	offs, err := adm.FetchOffsets(ctx, "copier")
	if err != nil || offs.Error() != nil {
		t.Fatalf("copier's offsets: %v", err)
	}
	sum = 0
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != total {
		t.Fatalf("copier committed offsets summing to %d, want %d", sum, total)
	}
}
