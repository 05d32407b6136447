package metadata

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Client quota entity types (Kafka's names).
const (
	QuotaEntityUser     = "user"
	QuotaEntityClientID = "client-id"
	QuotaEntityIP       = "ip"
)

// QuotaComponent is one part of a client quota's entity: a user, a client
// id or an IP address, or (Default) the default of its type.
type QuotaComponent struct {
	Type    string
	Name    string
	Default bool
}

// QuotaEntity is what a client quota applies to: one or two components
// (user, client-id, or both; or an ip), sorted by type.
type QuotaEntity []QuotaComponent

// key is the entity's map key.
func (e QuotaEntity) key() string {
	var b strings.Builder
	for _, c := range e {
		b.WriteString(c.Type)
		if c.Default {
			b.WriteString("\x00d")
		} else {
			b.WriteString("\x00n")
			b.WriteString(c.Name)
		}
		b.WriteString("\x01")
	}
	return b.String()
}

// Normalized returns a sorted copy of the entity.
func (e QuotaEntity) Normalized() QuotaEntity {
	out := slices.Clone(e)
	slices.SortFunc(out, func(a, b QuotaComponent) int { return cmp.Compare(a.Type, b.Type) })
	return out
}

// ClientQuota is the quotas of one entity: quota key → value.
type ClientQuota struct {
	Entity QuotaEntity
	Values map[string]float64
}

// ClientQuotaRecord sets (or, with Remove, removes) one quota of an entity
// (Kafka's ClientQuotaRecord).
type ClientQuotaRecord struct {
	Entity QuotaEntity
	Key    string
	Value  float64
	Remove bool
}

// Type implements Record.
func (*ClientQuotaRecord) Type() RecordType { return TypeClientQuota }

// Version implements Record.
func (*ClientQuotaRecord) Version() int16 { return 0 }

func (x *ClientQuotaRecord) appendFields(b []byte) []byte {
	b = appendUvarint(b, uint32(len(x.Entity))+1)
	for _, c := range x.Entity {
		b = appendCompactString(b, c.Type)
		if c.Default {
			b = appendUvarint(b, 0)
		} else {
			b = appendCompactString(b, c.Name)
		}
		b = appendTags(b)
	}
	b = appendCompactString(b, x.Key)
	b = appendInt64(b, int64(math.Float64bits(x.Value)))
	b = appendBool(b, x.Remove)
	return appendTags(b)
}

func (x *ClientQuotaRecord) readFields(r *reader, _ int16) {
	n := r.arrayLen("Entity", 3)
	if n < 0 {
		r.fail("Entity: null")
		return
	}
	x.Entity = nil
	for range n {
		var c QuotaComponent
		c.Type = r.string("EntityType")
		name, ok := r.nullableStringPtr("EntityName")
		c.Name, c.Default = name, !ok
		r.tags("EntityData", nil)
		if r.err != nil {
			return
		}
		x.Entity = append(x.Entity, c)
	}
	x.Key = r.string("Key")
	x.Value = math.Float64frombits(uint64(r.int64("Value")))
	x.Remove = r.bool("Remove")
	r.tags("ClientQuotaRecord", nil)
}

// ValidateQuotaEntity checks an entity as Kafka's controller does: one
// component per type; user, client-id, or both; or an ip alone. The error
// wraps kerr.InvalidRequest.
func ValidateQuotaEntity(e QuotaEntity) error {
	seen := map[string]bool{}
	for _, c := range e {
		switch c.Type {
		case QuotaEntityUser, QuotaEntityClientID, QuotaEntityIP:
		default:
			return quotaErr("unknown quota entity type %q", c.Type)
		}
		if seen[c.Type] {
			return quotaErr("quota entity type %q given twice", c.Type)
		}
		seen[c.Type] = true
	}
	switch {
	case len(e) == 0:
		return quotaErr("a quota entity needs at least one component")
	case seen[QuotaEntityIP] && len(e) > 1:
		return quotaErr("an ip quota entity cannot be combined with user or client-id")
	}
	return nil
}

// quotaErr is an INVALID_REQUEST about a quota entity.
func quotaErr(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, kerr.InvalidRequest)...)
}

func (d *Delta) replayClientQuota(x *ClientQuotaRecord, off uint64) error {
	e := x.Entity.Normalized()
	if err := ValidateQuotaEntity(e); err != nil {
		return replayErr(x, off, kerr.InvalidRequest, "%v", err)
	}
	if x.Key == "" || (!x.Remove && (math.IsNaN(x.Value) || math.IsInf(x.Value, 0))) {
		return replayErr(x, off, kerr.InvalidRequest, "quota %q = %v", x.Key, x.Value)
	}
	k := e.key()
	cur, ok := d.quotas[k]
	if !ok {
		var base map[string]float64
		if q, ok := d.base.quotas[k]; ok {
			base = q.Values
		}
		cur = &ClientQuota{Entity: e, Values: cloneMap(base, 1)}
		d.quotas[k] = cur
	}
	if x.Remove {
		delete(cur.Values, x.Key)
	} else {
		cur.Values[x.Key] = x.Value
	}
	return nil
}

// ClientQuotas returns every entity's quotas, sorted by entity.
func (im *Image) ClientQuotas() []ClientQuota {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range im.quotas {
			if !yield(k) {
				return
			}
		}
	})
	out := make([]ClientQuota, 0, len(keys))
	for _, k := range keys {
		out = append(out, im.quotas[k])
	}
	return out
}

// HasClientQuotas reports whether any client quota is set (cheap: the
// produce and fetch paths ask it on every request).
func (im *Image) HasClientQuotas() bool { return len(im.quotas) > 0 }

// ClientQuota returns the quotas of one entity.
func (im *Image) ClientQuota(e QuotaEntity) (map[string]float64, bool) {
	q, ok := im.quotas[e.Normalized().key()]
	return q.Values, ok
}
