package metadata

// Security protocol ids of broker endpoints (Kafka's SecurityProtocol ids).
const (
	SecurityPlaintext     int16 = 0
	SecuritySSL           int16 = 1
	SecuritySASLPlaintext int16 = 2
	SecuritySASLSSL       int16 = 3
)

// Endpoint is one listener a broker advertises.
type Endpoint struct {
	Name             string // listener name, e.g. "PLAINTEXT"
	Host             string
	Port             uint16
	SecurityProtocol int16 // one of the Security* constants
}

// BrokerFeature is a feature range a broker supports (Kafka's
// RegisterBrokerRecord.Features).
type BrokerFeature struct {
	Name                       string
	MinSupported, MaxSupported int16
}

// BrokerRegistration is a broker as the metadata records it: registered by a
// RegisterBrokerRecord, then fenced, unfenced or put in controlled shutdown.
// Treat it as immutable: its slices are shared between images.
type BrokerRegistration struct {
	ID int32
	// IncarnationID is random per broker process start; a new value means the
	// broker restarted.
	IncarnationID Uuid
	// Epoch is the broker epoch the controller assigned to this registration;
	// fence/unfence/unregister records must name it.
	Epoch     int64
	Endpoints []Endpoint
	Features  []BrokerFeature
	Rack      string // "" for no rack
	// Fenced brokers lead no partitions and are not offered to clients.
	Fenced               bool
	InControlledShutdown bool
}

// Endpoint returns the endpoint of the named listener.
func (b BrokerRegistration) Endpoint(listener string) (Endpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Name == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}

// RegisterBrokerRecord registers (or re-registers) a broker. Written at
// Kafka's version 1; versions 0-3 decode.
type RegisterBrokerRecord struct {
	BrokerRegistration
}

// Type implements Record.
func (*RegisterBrokerRecord) Type() RecordType { return TypeRegisterBroker }

// Version implements Record.
func (*RegisterBrokerRecord) Version() int16 { return 1 }

func (x *RegisterBrokerRecord) appendFields(b []byte) []byte {
	b = appendInt32(b, x.ID)
	b = appendUUID(b, x.IncarnationID)
	b = appendInt64(b, x.Epoch)
	b = appendUvarint(b, uint32(len(x.Endpoints))+1)
	for _, e := range x.Endpoints {
		b = appendCompactString(b, e.Name)
		b = appendCompactString(b, e.Host)
		b = appendUint16(b, e.Port)
		b = appendInt16(b, e.SecurityProtocol)
		b = appendTags(b)
	}
	b = appendUvarint(b, uint32(len(x.Features))+1)
	for _, f := range x.Features {
		b = appendCompactString(b, f.Name)
		b = appendInt16(b, f.MinSupported)
		b = appendInt16(b, f.MaxSupported)
		b = appendTags(b)
	}
	b = appendNullableString(b, x.Rack)
	b = appendBool(b, x.Fenced)
	b = appendBool(b, x.InControlledShutdown)
	return appendTags(b)
}

func (x *RegisterBrokerRecord) readFields(r *reader, v int16) {
	x.ID = r.int32("BrokerId")
	if v >= 2 {
		r.bool("IsMigratingZkBroker") // ZooKeeper migration does not exist in kmirror
	}
	x.IncarnationID = r.uuid("IncarnationId")
	x.Epoch = r.int64("BrokerEpoch")
	// An endpoint is at least 2 one-byte strings, port, protocol and tags.
	if n := r.arrayLen("EndPoints", 7); n > 0 {
		x.Endpoints = make([]Endpoint, n)
		for i := range x.Endpoints {
			e := &x.Endpoints[i]
			e.Name = r.string("EndPoints.Name")
			e.Host = r.string("EndPoints.Host")
			e.Port = r.uint16("EndPoints.Port")
			e.SecurityProtocol = r.int16("EndPoints.SecurityProtocol")
			r.tags("EndPoints", nil)
		}
	} else if n < 0 {
		r.fail("EndPoints: null in a non-nullable array")
	}
	if n := r.arrayLen("Features", 6); n > 0 {
		x.Features = make([]BrokerFeature, n)
		for i := range x.Features {
			f := &x.Features[i]
			f.Name = r.string("Features.Name")
			f.MinSupported = r.int16("Features.MinSupportedVersion")
			f.MaxSupported = r.int16("Features.MaxSupportedVersion")
			r.tags("Features", nil)
		}
	} else if n < 0 {
		r.fail("Features: null in a non-nullable array")
	}
	x.Rack = r.nullableString("Rack")
	x.Fenced = r.bool("Fenced")
	if v >= 1 {
		x.InControlledShutdown = r.bool("InControlledShutdown")
	}
	r.tags("RegisterBrokerRecord", nil) // v3's LogDirs (tag 0) is not used
}

// UnregisterBrokerRecord removes a broker's registration.
type UnregisterBrokerRecord struct {
	BrokerID    int32
	BrokerEpoch int64
}

// Type implements Record.
func (*UnregisterBrokerRecord) Type() RecordType { return TypeUnregisterBroker }

// Version implements Record.
func (*UnregisterBrokerRecord) Version() int16 { return 0 }

func (x *UnregisterBrokerRecord) appendFields(b []byte) []byte {
	b = appendInt32(b, x.BrokerID)
	b = appendInt64(b, x.BrokerEpoch)
	return appendTags(b)
}

func (x *UnregisterBrokerRecord) readFields(r *reader, _ int16) {
	x.BrokerID = r.int32("BrokerId")
	x.BrokerEpoch = r.int64("BrokerEpoch")
	r.tags("UnregisterBrokerRecord", nil)
}

// FenceBrokerRecord fences the broker registration with this id and epoch.
type FenceBrokerRecord struct {
	ID    int32
	Epoch int64
}

// Type implements Record.
func (*FenceBrokerRecord) Type() RecordType { return TypeFenceBroker }

// Version implements Record.
func (*FenceBrokerRecord) Version() int16 { return 0 }

func (x *FenceBrokerRecord) appendFields(b []byte) []byte {
	b = appendInt32(b, x.ID)
	b = appendInt64(b, x.Epoch)
	return appendTags(b)
}

func (x *FenceBrokerRecord) readFields(r *reader, _ int16) {
	x.ID = r.int32("Id")
	x.Epoch = r.int64("Epoch")
	r.tags("FenceBrokerRecord", nil)
}

// UnfenceBrokerRecord unfences the broker registration with this id and epoch.
type UnfenceBrokerRecord struct {
	ID    int32
	Epoch int64
}

// Type implements Record.
func (*UnfenceBrokerRecord) Type() RecordType { return TypeUnfenceBroker }

// Version implements Record.
func (*UnfenceBrokerRecord) Version() int16 { return 0 }

func (x *UnfenceBrokerRecord) appendFields(b []byte) []byte {
	b = appendInt32(b, x.ID)
	b = appendInt64(b, x.Epoch)
	return appendTags(b)
}

func (x *UnfenceBrokerRecord) readFields(r *reader, _ int16) {
	x.ID = r.int32("Id")
	x.Epoch = r.int64("Epoch")
	r.tags("UnfenceBrokerRecord", nil)
}

// FencingChange is BrokerRegistrationChangeRecord's fencing field. The zero
// value means "no change".
type FencingChange int8

// Fencing changes (Kafka's BrokerRegistrationFencingChange values).
const (
	FencingUnchanged FencingChange = 0
	FencingFence     FencingChange = 1
	FencingUnfence   FencingChange = -1
)

// ShutdownChange is BrokerRegistrationChangeRecord's controlled-shutdown
// field. The zero value means "no change"; a registration leaves controlled
// shutdown only by being replaced or unregistered, as in Kafka.
type ShutdownChange int8

// Controlled-shutdown changes (Kafka's
// BrokerRegistrationInControlledShutdownChange values).
const (
	ShutdownUnchanged ShutdownChange = 0
	ShutdownStarted   ShutdownChange = 1
)

// BrokerRegistrationChangeRecord changes the fencing or controlled-shutdown
// state of the broker registration with this id and epoch. Written at
// version 1; versions 0-2 decode.
type BrokerRegistrationChangeRecord struct {
	BrokerID             int32
	BrokerEpoch          int64
	Fenced               FencingChange
	InControlledShutdown ShutdownChange
}

// Type implements Record.
func (*BrokerRegistrationChangeRecord) Type() RecordType { return TypeBrokerRegistrationChange }

// Version implements Record.
func (*BrokerRegistrationChangeRecord) Version() int16 { return 1 }

func (x *BrokerRegistrationChangeRecord) appendFields(b []byte) []byte {
	b = appendInt32(b, x.BrokerID)
	b = appendInt64(b, x.BrokerEpoch)
	var tags []taggedField
	if x.Fenced != FencingUnchanged {
		tags = append(tags, taggedField{0, []byte{byte(x.Fenced)}})
	}
	if x.InControlledShutdown != ShutdownUnchanged {
		tags = append(tags, taggedField{1, []byte{byte(x.InControlledShutdown)}})
	}
	return appendTags(b, tags...)
}

func (x *BrokerRegistrationChangeRecord) readFields(r *reader, v int16) {
	x.BrokerID = r.int32("BrokerId")
	x.BrokerEpoch = r.int64("BrokerEpoch")
	r.tags("BrokerRegistrationChangeRecord", func(tag uint32, fr *reader) bool {
		switch {
		case tag == 0:
			x.Fenced = FencingChange(fr.int8("Fenced"))
		case tag == 1 && v >= 1:
			x.InControlledShutdown = ShutdownChange(fr.int8("InControlledShutdown"))
		default:
			return false
		}
		return true
	})
}
