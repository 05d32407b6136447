package metadata

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestClientQuotas(t *testing.T) {
	alice := QuotaEntity{{Type: QuotaEntityUser, Name: "alice"}}
	aliceApp := QuotaEntity{{Type: QuotaEntityClientID, Name: "app"}, {Type: QuotaEntityUser, Name: "alice"}}
	defUser := QuotaEntity{{Type: QuotaEntityUser, Default: true}}
	_, im := apply(t, EmptyImage(), 1,
		&ClientQuotaRecord{Entity: alice, Key: "producer_byte_rate", Value: 1000},
		&ClientQuotaRecord{Entity: alice, Key: "consumer_byte_rate", Value: 2000},
		&ClientQuotaRecord{Entity: QuotaEntity{aliceApp[1], aliceApp[0]}, Key: "request_percentage", Value: 50}, // any order
		&ClientQuotaRecord{Entity: defUser, Key: "producer_byte_rate", Value: 10},
	)
	if v, ok := im.ClientQuota(alice); !ok || v["producer_byte_rate"] != 1000 || v["consumer_byte_rate"] != 2000 || len(v) != 2 {
		t.Fatalf("alice's quotas: %v %v", v, ok)
	}
	if v, ok := im.ClientQuota(aliceApp); !ok || v["request_percentage"] != 50 {
		t.Fatalf("alice/app's quotas: %v %v", v, ok)
	}
	if v, ok := im.ClientQuota(defUser); !ok || v["producer_byte_rate"] != 10 {
		t.Fatalf("the default user's quotas: %v %v", v, ok)
	}
	if _, ok := im.ClientQuota(QuotaEntity{{Type: QuotaEntityUser, Name: ""}}); ok {
		t.Fatal("the user named \"\" is the default user")
	}

	// A snapshot replays to the same quotas.
	_, again := apply(t, EmptyImage(), 2, im.ToRecords()...)
	if len(again.ClientQuotas()) != 3 {
		t.Fatalf("quotas after a snapshot: %+v", again.ClientQuotas())
	}

	// Removing every key removes the entity.
	_, im = apply(t, im, 3,
		&ClientQuotaRecord{Entity: alice, Key: "producer_byte_rate", Remove: true},
		&ClientQuotaRecord{Entity: alice, Key: "consumer_byte_rate", Remove: true})
	if _, ok := im.ClientQuota(alice); ok || len(im.ClientQuotas()) != 2 {
		t.Fatalf("alice's quotas after removing both: %+v", im.ClientQuotas())
	}

	for _, bad := range []QuotaEntity{
		nil,
		{{Type: "group", Name: "g"}},
		{{Type: QuotaEntityUser, Name: "a"}, {Type: QuotaEntityUser, Name: "b"}},
		{{Type: QuotaEntityIP, Name: "10.0.0.1"}, {Type: QuotaEntityUser, Name: "a"}},
	} {
		d := NewDelta(im)
		if err := d.Replay(&ClientQuotaRecord{Entity: bad, Key: "producer_byte_rate", Value: 1}, 4); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("entity %+v: %v", bad, err)
		}
	}
}
