package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

func quotaComponent(typ string, match int8, name *string) kmsg.DescribeClientQuotasRequestComponent {
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType, c.Match = typ, kmsg.QuotasMatchType(match), name
	return c
}

func TestQuotaFilter(t *testing.T) {
	s := kmsg.StringPtr
	alice := metadata.QuotaEntity{{Type: "user", Name: "alice"}}
	aliceApp := metadata.QuotaEntity{{Type: "client-id", Name: "app"}, {Type: "user", Name: "alice"}}
	defUser := metadata.QuotaEntity{{Type: "user", Default: true}}
	type C = []kmsg.DescribeClientQuotasRequestComponent
	for _, tc := range []struct {
		name   string
		cs     C
		strict bool
		e      metadata.QuotaEntity
		want   bool
	}{
		{"exact user", C{quotaComponent("user", quotaMatchExact, s("alice"))}, false, alice, true},
		{"exact user, other name", C{quotaComponent("user", quotaMatchExact, s("bob"))}, false, alice, false},
		{"exact user matches a user+client entity", C{quotaComponent("user", quotaMatchExact, s("alice"))}, false, aliceApp, true},
		{"strict exact user does not", C{quotaComponent("user", quotaMatchExact, s("alice"))}, true, aliceApp, false},
		{"default user", C{quotaComponent("user", quotaMatchDefault, nil)}, false, defUser, true},
		{"default user is not alice", C{quotaComponent("user", quotaMatchDefault, nil)}, false, alice, false},
		{"any specified user", C{quotaComponent("user", quotaMatchSpecified, nil)}, false, alice, true},
		{"any specified user is not the default", C{quotaComponent("user", quotaMatchSpecified, nil)}, false, defUser, false},
		{"a client-id filter needs the component", C{quotaComponent("client-id", quotaMatchSpecified, nil)}, false, alice, false},
		{"no components, not strict: everything", nil, false, aliceApp, true},
	} {
		if got := quotaFilterMatches(tc.cs, tc.strict, tc.e); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, bad := range []C{
		{quotaComponent("user", quotaMatchExact, nil)},
		{quotaComponent("user", 7, nil)},
		{quotaComponent("group", quotaMatchSpecified, nil)},
		{quotaComponent("user", quotaMatchSpecified, nil), quotaComponent("user", quotaMatchDefault, nil)},
		{quotaComponent("ip", quotaMatchSpecified, nil), quotaComponent("user", quotaMatchDefault, nil)},
	} {
		if err := validateQuotaFilter(bad); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("filter %+v: %v", bad, err)
		}
	}
}
