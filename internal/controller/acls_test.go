package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/metadata"
)

func creation(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, pt
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, perm
	return c
}

func TestDecideCreateACLs(t *testing.T) {
	img := metadata.EmptyImage()
	req := kmsg.NewPtrCreateACLsRequest()
	req.SetVersion(3)
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	allow := kmsg.ACLPermissionTypeAllow
	req.Creations = []kmsg.CreateACLsRequestCreation{
		creation(kmsg.ACLResourceTypeTopic, "orders", lit, "User:alice", kmsg.ACLOperationRead, allow),
		creation(kmsg.ACLResourceTypeTopic, "orders", lit, "User:alice", kmsg.ACLOperationRead, allow), // duplicate in request
		creation(kmsg.ACLResourceTypeGroup, "g-", pre, "User:alice", kmsg.ACLOperationRead, allow),
		creation(kmsg.ACLResourceTypeAny, "x", lit, "User:alice", kmsg.ACLOperationRead, allow),
		creation(kmsg.ACLResourceTypeTopic, "x", kmsg.ACLResourcePatternTypeMatch, "User:alice", kmsg.ACLOperationRead, allow),
		creation(kmsg.ACLResourceTypeTopic, "x", lit, "alice", kmsg.ACLOperationRead, allow),
		creation(kmsg.ACLResourceTypeCluster, "other", lit, "User:alice", kmsg.ACLOperationAlter, allow),
		creation(kmsg.ACLResourceTypeTopic, "", lit, "User:alice", kmsg.ACLOperationRead, allow),
		creation(kmsg.ACLResourceTypeTopic, "x", lit, "User:alice", kmsg.ACLOperationAny, allow),
		creation(kmsg.ACLResourceTypeTopic, "x", lit, "User:alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAny),
	}
	recs, resp := decideCreateACLs(testView(t, img, nil), req)
	if len(resp.Results) != len(req.Creations) {
		t.Fatalf("%d results for %d creations", len(resp.Results), len(req.Creations))
	}
	for i := range 3 {
		wantCode(t, "valid creation", resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage, nil, "")
	}
	wantCode(t, "ANY resource", resp.Results[3].ErrorCode, resp.Results[3].ErrorMessage, kerr.InvalidRequest, "resourceType")
	wantCode(t, "MATCH pattern", resp.Results[4].ErrorCode, resp.Results[4].ErrorMessage, kerr.InvalidRequest, "patternType")
	wantCode(t, "principal without type", resp.Results[5].ErrorCode, resp.Results[5].ErrorMessage, kerr.InvalidRequest, "no colon")
	wantCode(t, "cluster name", resp.Results[6].ErrorCode, resp.Results[6].ErrorMessage, kerr.InvalidRequest, "kafka-cluster")
	wantCode(t, "empty name", resp.Results[7].ErrorCode, resp.Results[7].ErrorMessage, kerr.InvalidRequest, "empty")
	wantCode(t, "ANY operation", resp.Results[8].ErrorCode, resp.Results[8].ErrorMessage, kerr.InvalidRequest, "operation")
	wantCode(t, "ANY permission", resp.Results[9].ErrorCode, resp.Results[9].ErrorMessage, kerr.InvalidRequest, "permissionType")
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2 (the duplicate is stored once)", len(recs))
	}
	img = apply(t, img, recs...)
	if len(img.ACLs()) != 2 {
		t.Fatalf("image has %d acls", len(img.ACLs()))
	}
	// Creating an existing ACL again succeeds without a record.
	again := kmsg.NewPtrCreateACLsRequest()
	again.Creations = req.Creations[:1]
	recs, resp = decideCreateACLs(testView(t, img, nil), again)
	if len(recs) != 0 || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("re-creation: %d records, code %d", len(recs), resp.Results[0].ErrorCode)
	}
}

func TestDecideDeleteACLs(t *testing.T) {
	img := metadata.EmptyImage()
	create := kmsg.NewPtrCreateACLsRequest()
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	allow, deny := kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny
	create.Creations = []kmsg.CreateACLsRequestCreation{
		creation(kmsg.ACLResourceTypeTopic, "orders", lit, "User:alice", kmsg.ACLOperationRead, allow),
		creation(kmsg.ACLResourceTypeTopic, "ord", pre, "User:bob", kmsg.ACLOperationWrite, allow),
		creation(kmsg.ACLResourceTypeTopic, "*", lit, "User:eve", kmsg.ACLOperationAll, deny),
		creation(kmsg.ACLResourceTypeGroup, "g", lit, "User:alice", kmsg.ACLOperationRead, allow),
	}
	recs, _ := decideCreateACLs(testView(t, img, nil), create)
	img = apply(t, img, recs...)

	filter := func(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType) kmsg.DeleteACLsRequestFilter {
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType = rt, name, pt
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return f
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	del.SetVersion(3)
	del.Filters = []kmsg.DeleteACLsRequestFilter{
		// MATCH "orders": the literal, the prefix "ord" and the wildcard.
		filter(kmsg.ACLResourceTypeTopic, ptr("orders"), kmsg.ACLResourcePatternTypeMatch),
		// Everything on topics: the same three are already taken.
		filter(kmsg.ACLResourceTypeTopic, nil, kmsg.ACLResourcePatternTypeAny),
		filter(kmsg.ACLResourceTypeUnknown, nil, kmsg.ACLResourcePatternTypeAny),
	}
	recs, resp := decideDeleteACLs(testView(t, img, nil), del)
	if len(resp.Results) != 3 {
		t.Fatalf("%d results", len(resp.Results))
	}
	if n := len(resp.Results[0].MatchingACLs); n != 3 {
		t.Fatalf("MATCH filter removed %d acls, want 3", n)
	}
	if n := len(resp.Results[1].MatchingACLs); n != 0 || resp.Results[1].ErrorCode != 0 {
		t.Fatalf("second filter reported %d acls (code %d), want 0: each acl is reported once", n, resp.Results[1].ErrorCode)
	}
	wantCode(t, "unknown resource type", resp.Results[2].ErrorCode, resp.Results[2].ErrorMessage, kerr.InvalidRequest, "")
	img = apply(t, img, recs...)
	left := img.ACLs()
	if len(left) != 1 || auth.BindingOf(left[0]).ResourceType != kmsg.ACLResourceTypeGroup {
		t.Fatalf("left %+v", left)
	}
}

func TestDecideAlterScram(t *testing.T) {
	img := metadata.EmptyImage()
	up := func(name string, m auth.ScramMechanism, iterations int) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u, err := auth.NewScramUpsertion(m, name, "pw", max(iterations, auth.MinScramIterations))
		if err != nil {
			t.Fatal(err)
		}
		u.Iterations = int32(iterations)
		return u
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		up("alice", auth.ScramSHA256, 4096),
		up("alice", auth.ScramSHA512, 8192),
		up("bob", auth.ScramSHA512, 100),
		up("carol", auth.ScramSHA512, 4096),
		up("carol", auth.ScramSHA512, 4096),
	}
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "dave", Mechanism: 2}}
	recs, resp := decideAlterScram(testView(t, img, nil), req)
	got := map[string]int16{}
	var order []string
	for _, r := range resp.Results {
		got[r.User] = r.ErrorCode
		order = append(order, r.User)
		if r.ErrorMessage != nil && len(*r.ErrorMessage) > 0 && (*r.ErrorMessage)[0] >= 'a' && (*r.ErrorMessage)[0] <= 'z' {
			t.Errorf("message %q starts lower-case", *r.ErrorMessage)
		}
	}
	if len(order) != 4 || order[0] != "dave" {
		t.Fatalf("results %v (deletions' users come first)", order)
	}
	if got["alice"] != 0 || got["bob"] != kerr.UnacceptableCredential.Code ||
		got["carol"] != kerr.DuplicateResource.Code || got["dave"] != kerr.ResourceNotFound.Code {
		t.Fatalf("codes %v", got)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want alice's two", len(recs))
	}
	img = apply(t, img, recs...)
	cred, ok := img.ScramCredential("alice", auth.ScramSHA512.Code)
	if !ok || cred.Iterations != 8192 || len(cred.StoredKey) != 64 {
		t.Fatalf("stored credential %+v", cred)
	}
	// Deleting an existing credential works; the other mechanism stays.
	del := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "alice", Mechanism: auth.ScramSHA256.Code}}
	recs, resp = decideAlterScram(testView(t, img, nil), del)
	if resp.Results[0].ErrorCode != 0 || len(recs) != 1 {
		t.Fatalf("delete: %+v", resp.Results)
	}
	img = apply(t, img, recs...)
	if _, ok := img.ScramCredential("alice", auth.ScramSHA256.Code); ok {
		t.Fatal("deleted credential still there")
	}
	if _, ok := img.ScramCredential("alice", auth.ScramSHA512.Code); !ok {
		t.Fatal("the other mechanism's credential was removed")
	}
}
