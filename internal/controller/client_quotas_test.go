package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

func quotaEntry(entity [][2]*string, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for _, c := range entity {
		ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ec.Type, ec.Name = *c[0], c[1]
		e.Entity = append(e.Entity, ec)
	}
	e.Ops = ops
	return e
}

func quotaOp(key string, v float64, remove bool) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = key, v, remove
	return op
}

func TestDecideAlterClientQuotas(t *testing.T) {
	s := kmsg.StringPtr
	user, client, ip := s("user"), s("client-id"), s("ip")
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = []kmsg.AlterClientQuotasRequestEntry{
		quotaEntry([][2]*string{{user, s("alice")}}, quotaOp("producer_byte_rate", 1024, false), quotaOp("request_percentage", 12.5, false)),
		quotaEntry([][2]*string{{client, nil}, {user, s("alice")}}, quotaOp("consumer_byte_rate", 0, true)),
		quotaEntry([][2]*string{{ip, s("10.0.0.1")}}, quotaOp("connection_creation_rate", 5, false)),
		quotaEntry([][2]*string{{user, s("bob")}}, quotaOp("connection_creation_rate", 5, false)),                                    // an ip key
		quotaEntry([][2]*string{{user, s("bob")}}, quotaOp("producer_byte_rate", 1.5, false)),                                        // not whole
		quotaEntry([][2]*string{{user, s("bob")}}, quotaOp("request_percentage", -1, false)),                                         // not positive
		quotaEntry([][2]*string{{user, s("bob")}}, quotaOp("a", 1, false), quotaOp("a", 2, false)),                                   // unknown key
		quotaEntry([][2]*string{{user, s("bob")}}, quotaOp("producer_byte_rate", 1, false), quotaOp("producer_byte_rate", 2, false)), // twice
		quotaEntry([][2]*string{{ip, s("not-an-ip")}}, quotaOp("connection_creation_rate", 5, false)),
		quotaEntry([][2]*string{{ip, s("10.0.0.1")}, {user, s("bob")}}, quotaOp("producer_byte_rate", 1, false)),
		quotaEntry([][2]*string{{s("group"), s("g")}}, quotaOp("producer_byte_rate", 1, false)),
	}
	recs, resp := decideAlterClientQuotas(req)
	want := []*kerr.Error{nil, nil, nil, kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidRequest,
		kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidRequest}
	for i, w := range want {
		r := resp.Entries[i]
		wantCode(t, "entry "+string(rune('a'+i)), r.ErrorCode, r.ErrorMessage, w, "")
		if len(r.Entity) != len(req.Entries[i].Entity) {
			t.Errorf("entry %d answers entity %+v", i, r.Entity)
		}
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4: %+v", len(recs), recs)
	}
	img := apply(t, cluster(t), recs...)
	if v, ok := img.ClientQuota(metadata.QuotaEntity{{Type: "user", Name: "alice"}}); !ok || v["producer_byte_rate"] != 1024 || v["request_percentage"] != 12.5 {
		t.Fatalf("alice's quotas: %v", v)
	}
	if v, ok := img.ClientQuota(metadata.QuotaEntity{{Type: "ip", Name: "10.0.0.1"}}); !ok || v["connection_creation_rate"] != 5 {
		t.Fatalf("the ip's quotas: %v", v)
	}
	req.ValidateOnly = true
	if recs, _ := decideAlterClientQuotas(req); len(recs) != 0 {
		t.Fatal("records for validate-only")
	}
}
