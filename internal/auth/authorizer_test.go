package auth

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// acl builds a binding from short names: "topic", "lit"/"pre", principal,
// host, operation, "allow"/"deny".
func acl(rt, name, pattern, principal, host string, op kmsg.ACLOperation, perm string) Binding {
	b := Binding{ResourceName: name, Principal: principal, Host: host, Operation: op}
	b.ResourceType, _ = kmsg.ParseACLResourceType(rt)
	b.PatternType = kmsg.ACLResourcePatternTypeLiteral
	if pattern == "pre" {
		b.PatternType = kmsg.ACLResourcePatternTypePrefixed
	}
	b.Permission = kmsg.ACLPermissionTypeAllow
	if perm == "deny" {
		b.Permission = kmsg.ACLPermissionTypeDeny
	}
	return b
}

// imageWith returns an image holding the bindings, replayed through the
// metadata log's own rules.
func imageWith(t testing.TB, bs ...Binding) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(metadata.EmptyImage())
	for i, b := range bs {
		if err := b.Validate(); err != nil {
			t.Fatalf("acl %d: %v", i, err)
		}
		var id metadata.Uuid
		id[0], id[1], id[15] = byte(i>>8), byte(i), 1
		if err := d.Replay(&metadata.AccessControlEntryRecord{ACLEntry: b.Entry(id)}, uint64(i+1)); err != nil {
			t.Fatalf("replay acl %d: %v", i, err)
		}
	}
	return d.Apply()
}

const (
	alice = "User:alice"
	bob   = "User:bob"
	h1    = "10.0.0.1"
	h2    = "10.0.0.2"
)

func TestAuthorizerTable(t *testing.T) {
	type check struct {
		principal, host string
		op              kmsg.ACLOperation
		rt, name        string
		want            bool
	}
	R, W, D, DC, AC, ALL, ALT, DEL := kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationAll, kmsg.ACLOperationAlter, kmsg.ACLOperationDelete
	cases := []struct {
		name          string
		acls          []Binding
		supers        []string
		allowEveryone bool
		checks        []check
	}{
		{
			name: "no acls: denied unless allow.everyone",
			checks: []check{
				{alice, h1, R, "topic", "t", false},
				{alice, h1, kmsg.ACLOperationClusterAction, "cluster", ClusterResourceName, false},
			},
		},
		{
			name: "no acls with allow.everyone", allowEveryone: true,
			checks: []check{{alice, h1, R, "topic", "t", true}, {alice, h1, W, "group", "g", true}},
		},
		{
			name: "acls on the resource for someone else: denied even with allow.everyone", allowEveryone: true,
			acls: []Binding{acl("topic", "t", "lit", bob, "*", R, "allow")},
			checks: []check{
				{alice, h1, R, "topic", "t", false},
				{bob, h1, R, "topic", "t", true},
				{alice, h1, R, "topic", "other", true}, // no acl on other
			},
		},
		{
			name: "literal allow for one op",
			acls: []Binding{acl("topic", "t", "lit", alice, "*", R, "allow")},
			checks: []check{
				{alice, h1, R, "topic", "t", true},
				{alice, h1, W, "topic", "t", false},
				{alice, h1, R, "topic", "t2", false},
				{alice, h1, R, "group", "t", false},
				{bob, h1, R, "topic", "t", false},
			},
		},
		{
			name: "deny beats allow",
			acls: []Binding{
				acl("topic", "t", "lit", alice, "*", ALL, "allow"),
				acl("topic", "t", "lit", alice, "*", W, "deny"),
			},
			checks: []check{{alice, h1, R, "topic", "t", true}, {alice, h1, W, "topic", "t", false}},
		},
		{
			name: "deny on a prefix beats a literal allow",
			acls: []Binding{
				acl("topic", "secret-x", "lit", alice, "*", R, "allow"),
				acl("topic", "secret", "pre", "User:*", "*", ALL, "deny"),
			},
			checks: []check{{alice, h1, R, "topic", "secret-x", false}},
		},
		{
			name: "prefixed allow",
			acls: []Binding{acl("topic", "orders.", "pre", alice, "*", W, "allow")},
			checks: []check{
				{alice, h1, W, "topic", "orders.eu", true},
				{alice, h1, W, "topic", "orders.", true},
				{alice, h1, W, "topic", "orders", false},
				{alice, h1, W, "topic", "xorders.eu", false},
			},
		},
		{
			name: "several prefix lengths",
			acls: []Binding{
				acl("topic", "a", "pre", alice, "*", R, "allow"),
				acl("topic", "abc", "pre", alice, "*", R, "deny"),
				acl("topic", "abcdef", "pre", bob, "*", R, "allow"),
			},
			checks: []check{
				{alice, h1, R, "topic", "ab", true},
				{alice, h1, R, "topic", "abcd", false},
				{bob, h1, R, "topic", "abcdefg", true},
				{bob, h1, R, "topic", "abcd", false},
			},
		},
		{
			name: "wildcard resource and principal",
			acls: []Binding{acl("group", "*", "lit", "User:*", "*", R, "allow")},
			checks: []check{
				{alice, h1, R, "group", "any", true},
				{bob, h2, R, "group", "*", true},
				{alice, h1, R, "topic", "any", false},
			},
		},
		{
			name:   "literal * is not a prefix",
			acls:   []Binding{acl("topic", "*", "pre", alice, "*", R, "allow")},
			checks: []check{{alice, h1, R, "topic", "*x", true}, {alice, h1, R, "topic", "x", false}},
		},
		{
			name:   "host matching",
			acls:   []Binding{acl("topic", "t", "lit", alice, h1, R, "allow")},
			checks: []check{{alice, h1, R, "topic", "t", true}, {alice, h2, R, "topic", "t", false}},
		},
		{
			name: "host deny",
			acls: []Binding{
				acl("topic", "t", "lit", alice, "*", R, "allow"),
				acl("topic", "t", "lit", alice, h2, R, "deny"),
			},
			checks: []check{{alice, h1, R, "topic", "t", true}, {alice, h2, R, "topic", "t", false}},
		},
		{
			name: "implied describe from read, write, delete, alter",
			acls: []Binding{
				acl("topic", "r", "lit", alice, "*", R, "allow"),
				acl("topic", "w", "lit", alice, "*", W, "allow"),
				acl("topic", "d", "lit", alice, "*", DEL, "allow"),
				acl("topic", "a", "lit", alice, "*", ALT, "allow"),
				acl("topic", "c", "lit", alice, "*", kmsg.ACLOperationCreate, "allow"),
			},
			checks: []check{
				{alice, h1, D, "topic", "r", true}, {alice, h1, D, "topic", "w", true},
				{alice, h1, D, "topic", "d", true}, {alice, h1, D, "topic", "a", true},
				{alice, h1, D, "topic", "c", false}, // CREATE implies nothing
				{alice, h1, W, "topic", "r", false}, // implication goes one way
			},
		},
		{
			name:   "implied describe_configs from alter_configs",
			acls:   []Binding{acl("topic", "t", "lit", alice, "*", AC, "allow")},
			checks: []check{{alice, h1, DC, "topic", "t", true}, {alice, h1, D, "topic", "t", false}},
		},
		{
			name: "deny read does not deny describe",
			acls: []Binding{
				acl("topic", "t", "lit", alice, "*", ALL, "allow"),
				acl("topic", "t", "lit", alice, "*", R, "deny"),
			},
			checks: []check{{alice, h1, D, "topic", "t", true}, {alice, h1, R, "topic", "t", false}},
		},
		{
			name: "deny all denies every op",
			acls: []Binding{
				acl("topic", "t", "lit", alice, "*", R, "allow"),
				acl("topic", "*", "lit", alice, "*", ALL, "deny"),
			},
			checks: []check{{alice, h1, R, "topic", "t", false}, {alice, h1, D, "topic", "t", false}},
		},
		{
			name:   "super users bypass denies",
			supers: []string{"User:admin"},
			acls:   []Binding{acl("topic", "*", "lit", "User:*", "*", ALL, "deny")},
			checks: []check{
				{"User:admin", h1, W, "topic", "t", true},
				{"User:admin", h1, kmsg.ACLOperationClusterAction, "cluster", ClusterResourceName, true},
				{alice, h1, W, "topic", "t", false},
			},
		},
		{
			name: "cluster resource",
			acls: []Binding{acl("cluster", ClusterResourceName, "lit", alice, "*", ALT, "allow")},
			checks: []check{
				{alice, h1, ALT, "cluster", ClusterResourceName, true},
				{alice, h1, D, "cluster", ClusterResourceName, true},
				{alice, h1, kmsg.ACLOperationClusterAction, "cluster", ClusterResourceName, false},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAuthorizer(AuthorizerConfig{SuperUsers: tc.supers, AllowEveryoneIfNoACLFound: tc.allowEveryone})
			a.Load(imageWith(t, tc.acls...))
			for _, c := range tc.checks {
				rt, _ := kmsg.ParseACLResourceType(c.rt)
				if got := a.Authorize(c.principal, c.host, c.op, rt, c.name); got != c.want {
					t.Errorf("%s@%s %s %s:%s = %v, want %v", c.principal, c.host, OperationName(c.op), c.rt, c.name, got, c.want)
				}
			}
		})
	}
}

func TestAuthorizerNotReady(t *testing.T) {
	a := NewAuthorizer(AuthorizerConfig{SuperUsers: []string{"User:admin"}, AllowEveryoneIfNoACLFound: true})
	if a.Ready() || a.Authorize(alice, h1, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t") {
		t.Fatal("an authorizer without ACLs loaded must deny")
	}
	if !a.Authorize("User:admin", h1, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t") {
		t.Fatal("super users are allowed before the first load")
	}
}

// TestAuthorizerFollowsDeltas checks that the publisher rebuilds its index
// when ACLs are added and removed, and only then.
func TestAuthorizerFollowsDeltas(t *testing.T) {
	a := NewAuthorizer(AuthorizerConfig{})
	d := metadata.NewDelta(metadata.EmptyImage())
	id := metadata.RandomUuid()
	b := acl("topic", "t", "lit", alice, "*", kmsg.ACLOperationRead, "allow")
	if err := d.Replay(&metadata.AccessControlEntryRecord{ACLEntry: b.Entry(id)}, 1); err != nil {
		t.Fatal(err)
	}
	img := d.Apply()
	a.OnMetadataUpdate(d, img)
	if !a.Authorize(alice, h1, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t") {
		t.Fatal("added ACL not applied")
	}
	before := a.idx.Load()
	d2 := metadata.NewDelta(img)
	if err := d2.Replay(&metadata.ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 1, NextProducerID: 1000}, 2); err != nil {
		t.Fatal(err)
	}
	img = d2.Apply()
	a.OnMetadataUpdate(d2, img)
	if a.idx.Load() != before {
		t.Fatal("index rebuilt for a delta without ACL changes")
	}
	d3 := metadata.NewDelta(img)
	if err := d3.Replay(&metadata.RemoveAccessControlEntryRecord{ID: id}, 3); err != nil {
		t.Fatal(err)
	}
	a.OnMetadataUpdate(d3, d3.Apply())
	if a.Authorize(alice, h1, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t") {
		t.Fatal("removed ACL still applied")
	}
}

func TestAuthorizeAny(t *testing.T) {
	W := kmsg.ACLOperationWrite
	cases := []struct {
		name string
		acls []Binding
		want bool
	}{
		{"nothing", nil, false},
		{"literal allow", []Binding{acl("topic", "t", "lit", alice, "*", W, "allow")}, true},
		{"literal allow denied literally", []Binding{
			acl("topic", "t", "lit", alice, "*", W, "allow"), acl("topic", "t", "lit", alice, "*", W, "deny")}, false},
		{"literal allow denied by prefix", []Binding{
			acl("topic", "t1", "lit", alice, "*", W, "allow"), acl("topic", "t", "pre", alice, "*", W, "deny")}, false},
		{"prefixed allow outside the denied prefix", []Binding{
			acl("topic", "a", "pre", alice, "*", W, "allow"), acl("topic", "b", "pre", alice, "*", W, "deny")}, true},
		{"wildcard deny", []Binding{
			acl("topic", "t", "lit", alice, "*", W, "allow"), acl("topic", "*", "lit", alice, "*", W, "deny")}, false},
		{"other op", []Binding{acl("topic", "t", "lit", alice, "*", kmsg.ACLOperationRead, "allow")}, false},
		{"all", []Binding{acl("topic", "t", "lit", alice, "*", kmsg.ACLOperationAll, "allow")}, true},
	}
	for _, tc := range cases {
		a := NewAuthorizer(AuthorizerConfig{})
		a.Load(imageWith(t, tc.acls...))
		if got := a.AuthorizeAny(alice, h1, W, kmsg.ACLResourceTypeTopic); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFilterMatches(t *testing.T) {
	s := func(v string) *string { return &v }
	lit := acl("topic", "orders", "lit", alice, "*", kmsg.ACLOperationRead, "allow")
	pre := acl("topic", "ord", "pre", alice, "*", kmsg.ACLOperationRead, "allow")
	star := acl("topic", "*", "lit", bob, h1, kmsg.ACLOperationWrite, "deny")
	any := Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	with := func(f func(*Filter)) Filter { c := any; f(&c); return c }
	cases := []struct {
		f    Filter
		want [3]bool // lit, pre, star
	}{
		{any, [3]bool{true, true, true}},
		{with(func(f *Filter) { f.ResourceName = s("orders") }), [3]bool{true, false, false}},
		{with(func(f *Filter) { f.ResourceName = s("orders"); f.PatternType = kmsg.ACLResourcePatternTypeMatch }), [3]bool{true, true, true}},
		{with(func(f *Filter) { f.ResourceName = s("ord"); f.PatternType = kmsg.ACLResourcePatternTypePrefixed }), [3]bool{false, true, false}},
		{with(func(f *Filter) { f.PatternType = kmsg.ACLResourcePatternTypeLiteral }), [3]bool{true, false, true}},
		{with(func(f *Filter) { f.Principal = s(bob) }), [3]bool{false, false, true}},
		{with(func(f *Filter) { f.Host = s("*") }), [3]bool{true, true, false}},
		{with(func(f *Filter) { f.Operation = kmsg.ACLOperationWrite }), [3]bool{false, false, true}},
		{with(func(f *Filter) { f.Permission = kmsg.ACLPermissionTypeAllow }), [3]bool{true, true, false}},
		{with(func(f *Filter) { f.ResourceType = kmsg.ACLResourceTypeGroup }), [3]bool{false, false, false}},
	}
	for i, tc := range cases {
		got := [3]bool{tc.f.Matches(lit), tc.f.Matches(pre), tc.f.Matches(star)}
		if got != tc.want {
			t.Errorf("case %d: got %v, want %v", i, got, tc.want)
		}
	}
}

func TestBindingValidate(t *testing.T) {
	ok := acl("topic", "t", "lit", alice, "*", kmsg.ACLOperationRead, "allow")
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Binding){
		func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeAny },
		func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeMatch },
		func(b *Binding) { b.Operation = kmsg.ACLOperationAny },
		func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeAny },
		func(b *Binding) { b.ResourceName = "" },
		func(b *Binding) { b.Principal = "alice" },
		func(b *Binding) { b.Host = "" },
		func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeCluster; b.ResourceName = "c" },
	}
	for i, f := range bad {
		b := ok
		f(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("case %d: %v accepted", i, b)
		}
	}
}

// BenchmarkAuthorize measures a check against many ACLs: the index keeps it
// independent of their number.
func BenchmarkAuthorize(b *testing.B) {
	var bs []Binding
	for i := range 10000 {
		bs = append(bs, acl("topic", fmt.Sprintf("topic-%d", i), "lit", fmt.Sprintf("User:u%d", i%100), "*", kmsg.ACLOperationRead, "allow"))
		if i%10 == 0 {
			bs = append(bs, acl("topic", fmt.Sprintf("pre-%d-", i), "pre", "User:u1", "*", kmsg.ACLOperationWrite, "allow"))
		}
	}
	a := NewAuthorizer(AuthorizerConfig{})
	a.Load(imageWith(b, bs...))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		a.Authorize("User:u1", h1, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "topic-5001")
	}
}
