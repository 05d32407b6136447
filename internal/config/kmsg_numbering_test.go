package config

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sources and types are sent as they are in DescribeConfigs responses.
func TestNumberingMatchesKmsg(t *testing.T) {
	sources := map[ConfigSource]kmsg.ConfigSource{
		SourceUnknown:              kmsg.ConfigSourceUnknown,
		SourceDynamicTopic:         kmsg.ConfigSourceDynamicTopicConfig,
		SourceDynamicBroker:        kmsg.ConfigSourceDynamicBrokerConfig,
		SourceDynamicDefaultBroker: kmsg.ConfigSourceDynamicDefaultBrokerConfig,
		SourceStaticBroker:         kmsg.ConfigSourceStaticBrokerConfig,
		SourceDefault:              kmsg.ConfigSourceDefaultConfig,
	}
	for ours, theirs := range sources {
		if int8(ours) != int8(theirs) || ours.String() != theirs.String() {
			t.Errorf("%v (%d) vs kmsg %v (%d)", ours, ours, theirs, theirs)
		}
	}
	types := map[Type]kmsg.ConfigType{
		TypeBoolean: kmsg.ConfigTypeBoolean, TypeString: kmsg.ConfigTypeString, TypeInt: kmsg.ConfigTypeInt,
		TypeShort: kmsg.ConfigTypeShort, TypeLong: kmsg.ConfigTypeLong, TypeDouble: kmsg.ConfigTypeDouble,
		TypeList: kmsg.ConfigTypeList, TypeClass: kmsg.ConfigTypeClass, TypePassword: kmsg.ConfigTypePassword,
	}
	for ours, theirs := range types {
		if int8(ours) != int8(theirs) {
			t.Errorf("%v = %d, kmsg %v = %d", ours, ours, theirs, theirs)
		}
	}
}
