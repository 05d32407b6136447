package controller

import (
	"math"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// quotaKeyTypes are the quota keys Kafka knows, by the entities they apply
// to, with whether the value must be a whole number (Kafka's LONG and INT
// keys).
var quotaKeyTypes = map[string]struct {
	ip, whole bool
}{
	"producer_byte_rate":       {whole: true},
	"consumer_byte_rate":       {whole: true},
	"request_percentage":       {},
	"controller_mutation_rate": {},
	"connection_creation_rate": {ip: true, whole: true},
}

// quotaEntityOf converts a request's entity, validated as Kafka's
// controller does: known types, each once, ip alone and a valid address.
func quotaEntityOf(entity []kmsg.AlterClientQuotasRequestEntryEntity) (metadata.QuotaEntity, error) {
	var e metadata.QuotaEntity
	for _, c := range entity {
		qc := metadata.QuotaComponent{Type: c.Type, Default: c.Name == nil}
		if c.Name != nil {
			qc.Name = *c.Name
		}
		e = append(e, qc)
	}
	e = e.Normalized()
	if err := metadata.ValidateQuotaEntity(e); err != nil {
		return nil, errf(kerr.InvalidRequest, "%s", strings.TrimSuffix(err.Error(), ": "+kerr.InvalidRequest.Error()))
	}
	for _, c := range e {
		if c.Type == metadata.QuotaEntityIP && !c.Default && net.ParseIP(c.Name) == nil {
			return nil, errf(kerr.InvalidRequest, "%s is not a valid IP address", c.Name)
		}
	}
	return e, nil
}

// decideAlterClientQuotas applies AlterClientQuotas (key 49): one result
// per entry, each succeeding or failing as a whole. An op sets a key to
// its value or (Remove) removes it. Keys are Kafka's: producer_byte_rate,
// consumer_byte_rate, request_percentage and controller_mutation_rate for
// user and client-id entities, connection_creation_rate for ip entities;
// byte and connection rates are whole numbers; every value is positive.
// validateOnly decides without records.
func decideAlterClientQuotas(req *kmsg.AlterClientQuotasRequest) ([]metadata.Record, *kmsg.AlterClientQuotasResponse) {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	resp.Version = req.Version
	var recs []metadata.Record
	for _, entry := range req.Entries {
		r := kmsg.NewAlterClientQuotasResponseEntry()
		for _, c := range entry.Entity {
			re := kmsg.NewAlterClientQuotasResponseEntryEntity()
			re.Type, re.Name = c.Type, c.Name
			r.Entity = append(r.Entity, re)
		}
		erecs, err := alterQuotaEntry(entry)
		if err != nil {
			r.ErrorCode, r.ErrorMessage = codeOf(err), messageOf(err)
		} else {
			recs = append(recs, erecs...)
		}
		resp.Entries = append(resp.Entries, r)
	}
	if req.ValidateOnly {
		return nil, resp
	}
	return recs, resp
}

// alterQuotaEntry decides one entry.
func alterQuotaEntry(entry kmsg.AlterClientQuotasRequestEntry) ([]metadata.Record, error) {
	e, err := quotaEntityOf(entry.Entity)
	if err != nil {
		return nil, err
	}
	ip := e[0].Type == metadata.QuotaEntityIP
	seen := map[string]bool{}
	var recs []metadata.Record
	for _, op := range entry.Ops {
		kt, ok := quotaKeyTypes[op.Key]
		switch {
		case !ok || kt.ip != ip:
			return nil, errf(kerr.InvalidRequest, "Invalid configuration key %s", op.Key)
		case seen[op.Key]:
			return nil, errf(kerr.InvalidRequest, "Duplicate quota key %s not updating quota for entity %v", op.Key, e)
		}
		seen[op.Key] = true
		if !op.Remove {
			switch {
			case math.IsNaN(op.Value) || math.IsInf(op.Value, 0) || op.Value <= 0:
				return nil, errf(kerr.InvalidRequest, "Quota %s must be a positive number, not %v", op.Key, op.Value)
			case kt.whole && (op.Value != math.Trunc(op.Value) || op.Value > math.MaxInt64):
				return nil, errf(kerr.InvalidRequest, "Quota %s must be a whole number, not %v", op.Key, op.Value)
			}
		}
		recs = append(recs, &metadata.ClientQuotaRecord{Entity: e, Key: op.Key, Value: op.Value, Remove: op.Remove})
	}
	return recs, nil
}

// alterClientQuotas is the driver of AlterClientQuotas.
func (c *Controller) alterClientQuotas(req *kmsg.AlterClientQuotasRequest) (kmsg.Response, error) {
	var resp *kmsg.AlterClientQuotasResponse
	err := c.decide(func(_ *view) error {
		var recs []metadata.Record
		recs, resp = decideAlterClientQuotas(req)
		if len(recs) == 0 {
			return nil
		}
		if _, err := c.propose(recs); err != nil {
			perr := proposeError(err)
			for i := range resp.Entries {
				if resp.Entries[i].ErrorCode == 0 {
					resp.Entries[i].ErrorCode, resp.Entries[i].ErrorMessage = codeOf(perr), messageOf(perr)
				}
			}
			return nil
		}
		c.log.Info("client quotas altered", "records", len(recs))
		return nil
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return resp, nil
}
