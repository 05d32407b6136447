package auth

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// resourceKey identifies the ACLs of one resource pattern.
type resourceKey struct {
	rt   kmsg.ACLResourceType
	name string
}

// aclIndex is the authorizer's immutable view of the ACLs, rebuilt whenever
// they change. Invariants: every binding is in exactly one of literal (by
// exact name, "*" included) or prefixed (by prefix); prefixLens[rt] holds,
// ascending and without duplicates, the lengths of the prefixes of
// prefixed[rt, ...], so a check looks up only prefix lengths that exist; byType
// lists every binding of a resource type (for AuthorizeAny).
//
// A check therefore costs two map lookups for the literal and wildcard
// sections plus one per distinct prefix length, independent of the number
// of ACLs.
type aclIndex struct {
	literal    map[resourceKey][]Binding
	prefixed   map[resourceKey][]Binding
	prefixLens map[kmsg.ACLResourceType][]int
	byType     map[kmsg.ACLResourceType][]Binding
	count      int
}

// newACLIndex indexes the ACL entries of an image.
func newACLIndex(entries []metadata.ACLEntry) *aclIndex {
	x := &aclIndex{
		literal:    map[resourceKey][]Binding{},
		prefixed:   map[resourceKey][]Binding{},
		prefixLens: map[kmsg.ACLResourceType][]int{},
		byType:     map[kmsg.ACLResourceType][]Binding{},
		count:      len(entries),
	}
	for _, e := range entries {
		b := BindingOf(e)
		k := resourceKey{b.ResourceType, b.ResourceName}
		switch b.PatternType {
		case kmsg.ACLResourcePatternTypeLiteral:
			x.literal[k] = append(x.literal[k], b)
		case kmsg.ACLResourcePatternTypePrefixed:
			x.prefixed[k] = append(x.prefixed[k], b)
			lens := x.prefixLens[b.ResourceType]
			if i, found := slices.BinarySearch(lens, len(b.ResourceName)); !found {
				x.prefixLens[b.ResourceType] = slices.Insert(lens, i, len(b.ResourceName))
			}
		default:
			continue // replay admits only literal and prefixed
		}
		x.byType[b.ResourceType] = append(x.byType[b.ResourceType], b)
	}
	return x
}

// forResource calls f with every binding whose pattern matches the resource
// (rt, name): literal equal, literal "*", and prefixed prefixes of name. f
// returns false to stop early.
func (x *aclIndex) forResource(rt kmsg.ACLResourceType, name string, f func(Binding) bool) {
	for _, b := range x.literal[resourceKey{rt, name}] {
		if !f(b) {
			return
		}
	}
	if name != WildcardResource {
		for _, b := range x.literal[resourceKey{rt, WildcardResource}] {
			if !f(b) {
				return
			}
		}
	}
	for _, n := range x.prefixLens[rt] {
		if n > len(name) {
			break
		}
		for _, b := range x.prefixed[resourceKey{rt, name[:n]}] {
			if !f(b) {
				return
			}
		}
	}
}
