package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
	"github.com/kmirror/kmirror/internal/wire"
)

func mirrorAlter(name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceType(metadata.ResourceMirror), name, ops
	req.Resources = append(req.Resources, r)
	return req
}

func mop(o kmsg.IncrementalAlterConfigOp, name string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Op, c.Name, c.Value = o, name, value
	return c
}

// TestDecideMirrorAlterConfigs: a mirror's properties change through
// IncrementalAlterConfigs on resource type MIRROR, validated as
// CreateMirror validates them, with no secret in any message.
func TestDecideMirrorAlterConfigs(t *testing.T) {
	const secret = "planted-alter-pw"
	img := withMirror(t, cluster(t, upBrokers(1)...), "east", "security.protocol", "SASL_PLAINTEXT",
		"sasl.mechanism", "SCRAM-SHA-512", "sasl.username", "mirror", "sasl.password", "old-pw")
	set, del, app := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete, kmsg.IncrementalAlterConfigOpAppend
	cases := []struct {
		name    string
		req     *kmsg.IncrementalAlterConfigsRequest
		want    *kerr.Error
		msgPart string
		check   func(map[string]string) bool
	}{
		{"new password", mirrorAlter("east", mop(set, "sasl.password", ptr(secret))), nil, "",
			func(c map[string]string) bool { return c["sasl.password"] == secret }},
		{"append a bootstrap server", mirrorAlter("east", mop(app, "bootstrap.servers", ptr("src2:9092"))), nil, "",
			func(c map[string]string) bool { return c["bootstrap.servers"] == "src:9092,src2:9092" }},
		{"switch a sync off", mirrorAlter("east", mop(set, "sync.group.offsets.enabled", ptr("false"))), nil, "",
			func(c map[string]string) bool { return c["sync.group.offsets.enabled"] == "false" }},
		{"password removed", mirrorAlter("east", mop(del, "sasl.password", nil)), kerr.InvalidConfig, "sasl.password", nil},
		{"bootstrap removed", mirrorAlter("east", mop(del, "bootstrap.servers", nil)), kerr.InvalidConfig, "bootstrap.servers", nil},
		{"unknown property", mirrorAlter("east", mop(set, "sasl.pasword", ptr(secret))), kerr.InvalidConfig, "sasl.pasword", nil},
		{"jaas besides password", mirrorAlter("east", mop(set, "sasl.jaas.config", ptr("x required password=\""+secret+"\";"))), kerr.InvalidConfig, "not both", nil},
		{"unknown mirror", mirrorAlter("west", mop(set, "client.id", ptr("x"))), kerr.ResourceNotFound, `"west"`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, resp := decideIncrementalAlterConfigs(testView(t, img, nil), c.req)
			r := resp.Resources[0]
			wantCode(t, c.name, r.ErrorCode, r.ErrorMessage, c.want, c.msgPart)
			if strings.Contains(strp(r.ErrorMessage), secret) {
				t.Fatalf("message %q quotes a secret", strp(r.ErrorMessage))
			}
			if c.want != nil {
				if len(recs) != 0 {
					t.Fatalf("refused change wrote %d records", len(recs))
				}
				return
			}
			if got := apply(t, img, recs...).Configs(mirrorRes("east")); !c.check(got) {
				t.Fatalf("configs after: %v", mirrorconfig.Redact(got))
			}
		})
	}
	// Legacy AlterConfigs replaces the whole set, validated the same way.
	legacy := kmsg.NewPtrAlterConfigsRequest()
	lr := kmsg.NewAlterConfigsRequestResource()
	lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceType(metadata.ResourceMirror), "east"
	lc := kmsg.NewAlterConfigsRequestResourceConfig()
	lc.Name, lc.Value = "client.id", ptr("x")
	lr.Configs = append(lr.Configs, lc)
	legacy.Resources = append(legacy.Resources, lr)
	if _, resp := decideAlterConfigs(testView(t, img, nil), legacy); resp.Resources[0].ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("AlterConfigs without bootstrap.servers: code %d", resp.Resources[0].ErrorCode)
	}
}

func syncBinding(name string, op kmsg.ACLOperation) auth.Binding {
	return auth.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: name, PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:alice", Host: "*", Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

func syncedACLsReq(mirror string, bs ...auth.Binding) *kmsg.CreateACLsRequest {
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 2
	for _, b := range bs {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		req.Creations = append(req.Creations, cr)
	}
	req.UnknownTags.Set(mirrorACLSyncTag, []byte(mirror))
	return req
}

// TestDecideSyncedACLs: the sync's ACLs get their synced ids; a binding an
// operator created already keeps its own id (and so stays the operator's).
func TestDecideSyncedACLs(t *testing.T) {
	read, write := syncBinding("orders", kmsg.ACLOperationRead), syncBinding("orders", kmsg.ACLOperationWrite)
	img := withMirror(t, cluster(t, upBrokers(1)...), "east")
	img = apply(t, img, &metadata.AccessControlEntryRecord{ACLEntry: write.Entry(metadata.Uuid{7})})
	recs, resp := decideSyncedACLs(testView(t, img, nil), "east", syncedACLsReq("east", read, write, read))
	for i, r := range resp.Results {
		wantCode(t, "creation", r.ErrorCode, r.ErrorMessage, nil, "")
		_ = i
	}
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1 (the existing and the repeated binding store nothing)", len(recs))
	}
	after := apply(t, img, recs...)
	if e, ok := after.ACL(mirrorconfig.SyncedACLID("east", read)); !ok || auth.BindingOf(e) != read {
		t.Fatalf("the synced ACL is not under its synced id: %v %v", e, ok)
	}
	if _, ok := after.ACL(mirrorconfig.SyncedACLID("east", write)); ok {
		t.Fatal("the operator's ACL was taken over by the sync")
	}
	_, resp = decideSyncedACLs(testView(t, img, nil), "west", syncedACLsReq("west", read))
	wantCode(t, "unknown mirror", resp.Results[0].ErrorCode, resp.Results[0].ErrorMessage, kerr.ResourceNotFound, `"west"`)
	bad := read
	bad.Principal = "alice"
	_, resp = decideSyncedACLs(testView(t, img, nil), "east", syncedACLsReq("east", bad))
	wantCode(t, "invalid binding", resp.Results[0].ErrorCode, resp.Results[0].ErrorMessage, kerr.InvalidRequest, "principal")
}

// TestSyncedACLsOverChannel creates synced ACLs through a node's Channel;
// the tag sent by a client (through Channel.Send, or on a listener that is
// not a controller listener) only creates an ordinary ACL.
func TestSyncedACLsOverChannel(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	nd := c.start(1)
	ctl := c.active().ctl.Load()
	registerBroker(t, ctl.Handle, nd.q, 1)
	ch := NewChannel(nd.q, ctl, "test", c.log)
	defer ch.Close()
	if r := send[*wire.CreateMirrorResponse](t, sender(ch.Send), createMirrorReq("east", "bootstrap.servers", "src:9092")); r.ErrorCode != 0 {
		t.Fatalf("create mirror: %d %s", r.ErrorCode, strp(r.ErrorMessage))
	}
	read := syncBinding("orders", kmsg.ACLOperationRead)
	errs, err := ch.CreateSyncedACLs(testCtx(t), "east", []auth.Binding{read})
	if err != nil || len(errs) != 1 || errs[0] != nil {
		t.Fatalf("CreateSyncedACLs: %v %v", errs, err)
	}
	waitFor(t, 10*time.Second, "the synced ACL in the image", func() bool {
		_, ok := nd.q.Image().ACL(mirrorconfig.SyncedACLID("east", read))
		return ok
	})
	errs, err = ch.CreateSyncedACLs(testCtx(t), "nope", []auth.Binding{read})
	if err != nil || len(errs) != 1 || !strings.Contains(errs[0].Error(), "does not exist") {
		t.Fatalf("unknown mirror: %v %v", errs, err)
	}

	viaSend, viaListener := syncBinding("a", kmsg.ACLOperationRead), syncBinding("b", kmsg.ACLOperationRead)
	if _, err := ch.Send(testCtx(t), syncedACLsReq("east", viaSend)); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.handleWire(testCtx(t), &wire.RequestContext{Listener: "PLAINTEXT"}, syncedACLsReq("east", viaListener)); err != nil {
		t.Fatal(err)
	}
	for _, b := range []auth.Binding{viaSend, viaListener} {
		waitFor(t, 10*time.Second, "the client's ACL in the image", func() bool {
			for _, e := range nd.q.Image().ACLs() {
				if auth.BindingOf(e) == b {
					return true
				}
			}
			return false
		})
		if _, ok := nd.q.Image().ACL(mirrorconfig.SyncedACLID("east", b)); ok {
			t.Fatalf("a client's tagged CreateAcls stored %s under its synced id", b)
		}
	}
}
