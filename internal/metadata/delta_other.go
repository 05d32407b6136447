package metadata

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file holds the replay rules of the cluster-wide singletons and small
// tables: the producer-id counter, ACLs, SCRAM credentials and features.

// producerIDs returns the next producer id as the delta sees it.
func (d *Delta) producerIDs() int64 {
	if d.producerIDSet {
		return d.nextProducerID
	}
	return d.base.nextProducerID
}

// replayProducerIDs moves the counter forward; it never moves back, because
// ids below it may be in use by producers.
func (d *Delta) replayProducerIDs(x *ProducerIdsRecord, off uint64) error {
	if cur := d.producerIDs(); x.NextProducerID <= cur {
		return replayErr(x, off, kerr.InvalidRequest, "next producer id %d is not above %d", x.NextProducerID, cur)
	}
	d.producerIDSet, d.nextProducerID = true, x.NextProducerID
	return nil
}

func (d *Delta) acl(id Uuid) bool {
	if a, ok := d.acls[id]; ok {
		return a != nil
	}
	_, ok := d.base.acls[id]
	return ok
}

func (d *Delta) replayACL(x *AccessControlEntryRecord, off uint64) error {
	a := x.ACLEntry
	switch {
	case a.ID.IsZero():
		return replayErr(x, off, kerr.InvalidRequest, "acl id is zero")
	case a.ResourceType < ACLResourceTopic || a.ResourceType > ACLResourceUser:
		return replayErr(x, off, kerr.InvalidRequest, "acl %s: resource type %d", a.ID, a.ResourceType)
	case a.PatternType != ACLPatternLiteral && a.PatternType != ACLPatternPrefixed:
		return replayErr(x, off, kerr.InvalidRequest, "acl %s: pattern type %d", a.ID, a.PatternType)
	case a.Operation < ACLOperationAll || a.Operation > ACLOperationTwoPhaseCommit:
		return replayErr(x, off, kerr.InvalidRequest, "acl %s: operation %d", a.ID, a.Operation)
	case a.Permission != ACLPermissionDeny && a.Permission != ACLPermissionAllow:
		return replayErr(x, off, kerr.InvalidRequest, "acl %s: permission %d", a.ID, a.Permission)
	case a.ResourceName == "" || a.Principal == "" || a.Host == "":
		return replayErr(x, off, kerr.InvalidRequest, "acl %s: empty resource name, principal or host", a.ID)
	case d.acl(a.ID):
		return replayErr(x, off, kerr.DuplicateResource, "acl %s already exists", a.ID)
	}
	d.acls[a.ID] = &a
	return nil
}

func (d *Delta) replayRemoveACL(x *RemoveAccessControlEntryRecord, off uint64) error {
	if !d.acl(x.ID) {
		return replayErr(x, off, kerr.ResourceNotFound, "acl %s does not exist", x.ID)
	}
	if _, inBase := d.base.acls[x.ID]; inBase {
		d.acls[x.ID] = nil
	} else {
		delete(d.acls, x.ID)
	}
	return nil
}

func (d *Delta) scramExists(k ScramKey) bool {
	if c, ok := d.scram[k]; ok {
		return c != nil
	}
	_, ok := d.base.scram[k]
	return ok
}

func validScramMechanism(m int8) bool { return m == ScramSHA256 || m == ScramSHA512 }

func (d *Delta) replayScram(x *UserScramCredentialRecord, off uint64) error {
	c := x.ScramCredential
	switch {
	case c.Name == "":
		return replayErr(x, off, kerr.InvalidRequest, "scram credential with an empty user name")
	case !validScramMechanism(c.Mechanism):
		return replayErr(x, off, kerr.UnsupportedSaslMechanism, "user %s: scram mechanism %d", c.Name, c.Mechanism)
	case c.Iterations <= 0:
		return replayErr(x, off, kerr.InvalidRequest, "user %s: %d iterations", c.Name, c.Iterations)
	}
	c.Salt = cloneBytes(c.Salt)
	c.StoredKey = cloneBytes(c.StoredKey)
	c.ServerKey = cloneBytes(c.ServerKey)
	d.scram[ScramKey{c.Name, c.Mechanism}] = &c
	return nil
}

func (d *Delta) replayRemoveScram(x *RemoveUserScramCredentialRecord, off uint64) error {
	k := ScramKey{x.Name, x.Mechanism}
	if !d.scramExists(k) {
		return replayErr(x, off, kerr.ResourceNotFound, "user %s has no credential for mechanism %d", x.Name, x.Mechanism)
	}
	if _, inBase := d.base.scram[k]; inBase {
		d.scram[k] = nil
	} else {
		delete(d.scram, k)
	}
	return nil
}

func (d *Delta) replayFeature(x *FeatureLevelRecord, off uint64) error {
	if x.Name == "" || x.Level < 0 {
		return replayErr(x, off, kerr.InvalidRequest, "feature %q level %d", x.Name, x.Level)
	}
	if _, inBase := d.base.features[x.Name]; !inBase && x.Level == 0 {
		delete(d.features, x.Name)
		return nil
	}
	d.features[x.Name] = x.Level
	return nil
}

// sortedKeys returns the keys of m sorted by less.
func sortedKeys[K comparable, V any](m map[K]V, cmp func(a, b K) int) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, cmp)
	return ks
}
