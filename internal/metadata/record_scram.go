package metadata

// SCRAM mechanisms (Kafka's ScramMechanism codes).
const (
	ScramSHA256 int8 = 1
	ScramSHA512 int8 = 2
)

// ScramCredential is a user's SCRAM credential for one mechanism: what the
// server needs to verify a client proof, never the password. Treat it as
// immutable: images share its byte slices.
type ScramCredential struct {
	Name       string
	Mechanism  int8 // ScramSHA256 or ScramSHA512
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// ScramKey identifies a SCRAM credential.
type ScramKey struct {
	Name      string
	Mechanism int8
}

// UserScramCredentialRecord adds or replaces a user's credential for one
// mechanism.
type UserScramCredentialRecord struct {
	ScramCredential
}

// Type implements Record.
func (*UserScramCredentialRecord) Type() RecordType { return TypeUserScramCredential }

// Version implements Record.
func (*UserScramCredentialRecord) Version() int16 { return 0 }

func (x *UserScramCredentialRecord) appendFields(b []byte) []byte {
	b = appendCompactString(b, x.Name)
	b = appendInt8(b, x.Mechanism)
	b = appendCompactBytes(b, x.Salt)
	b = appendCompactBytes(b, x.StoredKey)
	b = appendCompactBytes(b, x.ServerKey)
	b = appendInt32(b, x.Iterations)
	return appendTags(b)
}

func (x *UserScramCredentialRecord) readFields(r *reader, _ int16) {
	x.Name = r.string("Name")
	x.Mechanism = r.int8("Mechanism")
	x.Salt = r.bytes("Salt")
	x.StoredKey = r.bytes("StoredKey")
	x.ServerKey = r.bytes("ServerKey")
	x.Iterations = r.int32("Iterations")
	r.tags("UserScramCredentialRecord", nil)
}

// RemoveUserScramCredentialRecord removes a user's credential for one
// mechanism.
type RemoveUserScramCredentialRecord struct {
	Name      string
	Mechanism int8
}

// Type implements Record.
func (*RemoveUserScramCredentialRecord) Type() RecordType { return TypeRemoveUserScramCredential }

// Version implements Record.
func (*RemoveUserScramCredentialRecord) Version() int16 { return 0 }

func (x *RemoveUserScramCredentialRecord) appendFields(b []byte) []byte {
	b = appendCompactString(b, x.Name)
	b = appendInt8(b, x.Mechanism)
	return appendTags(b)
}

func (x *RemoveUserScramCredentialRecord) readFields(r *reader, _ int16) {
	x.Name = r.string("Name")
	x.Mechanism = r.int8("Mechanism")
	r.tags("RemoveUserScramCredentialRecord", nil)
}
