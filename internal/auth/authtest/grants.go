package authtest

import (
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Grants is an authorizer for handler tests: the principal may do exactly
// what it lists, each right written "OPERATION RESOURCE_TYPE name" in
// kmsg's names ("WRITE TOPIC orders", "CLUSTER_ACTION CLUSTER
// kafka-cluster"), whoever asks and from wherever. It counts the checks it
// answers, so a test can tell a handler asked once per resource.
type Grants struct {
	mu    sync.Mutex
	allow map[string]bool
	calls int
}

// NewGrants returns a Grants allowing exactly entries.
func NewGrants(entries ...string) *Grants {
	g := &Grants{allow: map[string]bool{}}
	g.Allow(entries...)
	return g
}

// Allow adds rights.
func (g *Grants) Allow(entries ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, e := range entries {
		g.allow[e] = true
	}
}

// Calls is how many Authorize checks g has answered.
func (g *Grants) Calls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

// Authorize says whether the right op on the resource rt name is listed.
func (g *Grants) Authorize(_, _ string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	return g.allow[op.String()+" "+rt.String()+" "+name]
}

// AuthorizeAny says whether op is listed on some resource of type rt.
func (g *Grants) AuthorizeAny(_, _ string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	prefix := op.String() + " " + rt.String() + " "
	for k := range g.allow {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}
