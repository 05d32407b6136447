package mirrorconfig

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/kmirror/kmirror/internal/config"
)

// Names of the mirror properties. Connection properties carry the Kafka
// client's names, so that an operator can copy them from a client
// configuration; sync options follow MirrorMaker 2 where it has the setting.
const (
	BootstrapServers               = "bootstrap.servers"
	ClientID                       = "client.id"
	SecurityProtocol               = "security.protocol"
	SASLMechanism                  = "sasl.mechanism"
	SASLUsername                   = "sasl.username"
	SASLPassword                   = "sasl.password"
	SASLJAASConfig                 = "sasl.jaas.config"
	SSLCALocation                  = "ssl.ca.location"
	SSLCertificateLocation         = "ssl.certificate.location"
	SSLKeyLocation                 = "ssl.key.location"
	SSLKeyPassword                 = "ssl.key.password"
	SSLKeystoreLocation            = "ssl.keystore.location"
	SSLKeystorePassword            = "ssl.keystore.password"
	SSLKeystoreType                = "ssl.keystore.type"
	SSLTruststoreLocation          = "ssl.truststore.location"
	SSLTruststorePassword          = "ssl.truststore.password"
	SSLTruststoreType              = "ssl.truststore.type"
	SSLEndpointIdentification      = "ssl.endpoint.identification.algorithm"
	ConnectionsMaxIdleMs           = "connections.max.idle.ms"
	MetadataMaxAgeMs               = "metadata.max.age.ms"
	SocketConnectionSetupTimeoutMs = "socket.connection.setup.timeout.ms"
	SyncTopicConfigsEnabled        = "sync.topic.configs.enabled"
	SyncTopicPartitionsEnabled     = "sync.topic.partitions.enabled"
	SyncGroupOffsetsEnabled        = "sync.group.offsets.enabled"
	SyncTopicACLsEnabled           = "sync.topic.acls.enabled"
	Groups                         = "groups"
	GroupsExclude                  = "groups.exclude"
	ACLPrincipals                  = "acls.principals"
	ACLPrincipalsExclude           = "acls.principals.exclude"
)

// Defaults of the properties that have one.
const (
	defaultClientID                = "kmirror-mirror"
	defaultSocketConnectionSetupMs = "10000"
	defaultConnectionsMaxIdleMs    = "540000"
	defaultMetadataMaxAgeMs        = "300000"
	defaultSecurityProtocol        = "PLAINTEXT"
	defaultSSLEndpointIdentity     = "https"
)

// Security protocols a mirror may name (Kafka's).
var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// saslMechanisms are the mechanisms kmirror's clients implement.
var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

func str(s string) *string { return &s }

// regexList accepts a list of regular expressions (Go syntax, matched
// against a whole name).
var regexList = config.ValidatorFunc("comma-separated regular expressions", func(v config.Value) error {
	for _, p := range v.List() {
		if _, err := regexp.Compile("^(?:" + p + ")$"); err != nil {
			return fmt.Errorf("%q is not a regular expression: %v", p, err)
		}
	}
	return nil
})

// hostPortList accepts a non-empty list of host:port addresses.
var hostPortList = config.ValidatorFunc("host1:port1,host2:port2,...", func(v config.Value) error {
	addrs := v.List()
	if len(addrs) == 0 {
		return fmt.Errorf("no address given")
	}
	for _, a := range addrs {
		if err := checkHostPort(a); err != nil {
			return err
		}
	}
	return nil
})

// definitions is the table of mirror properties. Scope is unused here (the
// properties belong to a MIRROR resource, neither a broker nor a topic).
func definitions() []config.Definition {
	return []config.Definition{
		{Name: BootstrapServers, Type: config.TypeList, Validator: hostPortList, Importance: config.High,
			Doc: "Required. The source cluster's brokers to start from, as host:port pairs separated by commas; the client discovers the rest."},
		{Name: ClientID, Type: config.TypeString, Default: str(defaultClientID), Importance: config.Medium,
			Doc: "The client id the mirror's connections to the source send, which the source's logs, quotas and metrics see."},
		{Name: SecurityProtocol, Type: config.TypeString, Default: str(defaultSecurityProtocol), Validator: config.OneOfIgnoreCase(securityProtocols...), Importance: config.High,
			Doc: "Protocol of the connections to the source: PLAINTEXT, SSL (TLS), SASL_PLAINTEXT or SASL_SSL (SASL over TLS)."},
		{Name: SASLMechanism, Type: config.TypeString, Validator: config.OneOf(saslMechanisms...), Importance: config.High,
			Doc: "SASL mechanism for SASL_PLAINTEXT and SASL_SSL (required with them): PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512."},
		{Name: SASLUsername, Type: config.TypeString, Importance: config.High, Kmirror: true,
			Doc: "kmirror: the SASL user name (an alternative to sasl.jaas.config, as librdkafka names it)."},
		{Name: SASLPassword, Type: config.TypePassword, Sensitive: true, Importance: config.High, Kmirror: true,
			Doc: "kmirror: the SASL password. Secret: never returned by DescribeMirrors nor logged."},
		{Name: SASLJAASConfig, Type: config.TypePassword, Sensitive: true, Importance: config.High,
			Doc: "JAAS login configuration as the Java client takes it, e.g. org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" password=\"p\";. Secret."},
		{Name: SSLCALocation, Type: config.TypeString, Importance: config.High, Kmirror: true,
			Doc: "kmirror: PEM file of the certificate authorities trusted for the source's certificates (librdkafka's name)."},
		{Name: SSLCertificateLocation, Type: config.TypeString, Importance: config.High, Kmirror: true,
			Doc: "kmirror: PEM file of the mirror's client certificate chain, for mutual TLS."},
		{Name: SSLKeyLocation, Type: config.TypeString, Importance: config.High, Kmirror: true,
			Doc: "kmirror: PEM file of the client certificate's private key."},
		{Name: SSLKeyPassword, Type: config.TypePassword, Sensitive: true, Importance: config.High,
			Doc: "Password of the private key. Secret. kmirror reads unencrypted PEM keys only: an encrypted key is refused when the client is built."},
		{Name: SSLKeystoreLocation, Type: config.TypeString, Importance: config.High,
			Doc: "Key store with the client certificate and key. kmirror reads PEM key stores (ssl.keystore.type=PEM) only."},
		{Name: SSLKeystorePassword, Type: config.TypePassword, Sensitive: true, Importance: config.High,
			Doc: "Password of the key store. Secret."},
		{Name: SSLKeystoreType, Type: config.TypeString, Default: str("PKCS12"), Validator: config.OneOfIgnoreCase("PKCS12", "PEM"), Importance: config.Medium,
			Doc: "Format of ssl.keystore.location: PKCS12 or PEM."},
		{Name: SSLTruststoreLocation, Type: config.TypeString, Importance: config.High,
			Doc: "Trust store with the certificate authorities. kmirror reads PEM trust stores (ssl.truststore.type=PEM) only."},
		{Name: SSLTruststorePassword, Type: config.TypePassword, Sensitive: true, Importance: config.High,
			Doc: "Password of the trust store. Secret."},
		{Name: SSLTruststoreType, Type: config.TypeString, Default: str("PKCS12"), Validator: config.OneOfIgnoreCase("PKCS12", "PEM"), Importance: config.Medium,
			Doc: "Format of ssl.truststore.location: PKCS12 or PEM."},
		{Name: SSLEndpointIdentification, Type: config.TypeString, Default: str(defaultSSLEndpointIdentity), Validator: config.OneOfIgnoreCase("https", ""), Importance: config.Medium,
			Doc: "'https' checks that the source broker's certificate names its host; empty disables the check."},
		{Name: ConnectionsMaxIdleMs, Type: config.TypeLong, Default: str(defaultConnectionsMaxIdleMs), Validator: config.Between(100, 900000), Importance: config.Medium,
			Doc: "Close connections to the source idle for this long. kmirror's client accepts 100 ms to 15 minutes."},
		{Name: MetadataMaxAgeMs, Type: config.TypeLong, Default: str(defaultMetadataMaxAgeMs), Validator: config.Between(5000, 3600000), Importance: config.Low,
			Doc: "Refresh the source's metadata at least this often, even without leadership changes. kmirror's client accepts 5 seconds to 1 hour."},
		{Name: SocketConnectionSetupTimeoutMs, Type: config.TypeLong, Default: str(defaultSocketConnectionSetupMs), Validator: config.AtLeast(1), Importance: config.Medium,
			Doc: "How long a connection attempt to a source broker may take."},
		{Name: SyncTopicConfigsEnabled, Type: config.TypeBoolean, Default: str("true"), Importance: config.Medium,
			Doc: "Periodically copy the mirrored topics' configs from the source (except the never-synced ones, such as mirror.name)."},
		{Name: SyncTopicPartitionsEnabled, Type: config.TypeBoolean, Default: str("true"), Importance: config.Medium, Kmirror: true,
			Doc: "kmirror: add partitions added on the source to the mirrored topics, and mirror them."},
		{Name: SyncGroupOffsetsEnabled, Type: config.TypeBoolean, Default: str("true"), Importance: config.Medium,
			Doc: "Periodically copy consumer group offsets of the mirrored topics from the source (groups without active members on this cluster only). kmirror enables it by default; MirrorMaker 2 does not."},
		{Name: SyncTopicACLsEnabled, Type: config.TypeBoolean, Default: str("true"), Importance: config.Medium,
			Doc: "Periodically copy from the source the ACLs of the mirrored topics and of the synced groups (acls.principals selects whose)."},
		{Name: Groups, Type: config.TypeList, Default: str(".*"), Validator: regexList, Importance: config.Medium,
			Doc: "Consumer groups whose offsets are synced: regular expressions matched against the whole group id."},
		{Name: GroupsExclude, Type: config.TypeList, Default: str(""), Validator: regexList, Importance: config.Medium,
			Doc: "Consumer groups never synced, even if groups matches them."},
		{Name: ACLPrincipals, Type: config.TypeList, Default: str(".*"), Validator: regexList, Importance: config.Medium, Kmirror: true,
			Doc: "kmirror: principals whose ACLs the ACL sync copies: regular expressions matched against the whole principal, e.g. User:app-.*."},
		{Name: ACLPrincipalsExclude, Type: config.TypeList, Default: str(""), Validator: regexList, Importance: config.Medium, Kmirror: true,
			Doc: "kmirror: principals whose ACLs are never copied, even if acls.principals matches them."},
	}
}

var (
	tableOnce sync.Once
	table     []config.Definition
	index     map[string]*config.Definition
)

func loadTable() {
	tableOnce.Do(func() {
		table = definitions()
		slices.SortFunc(table, func(a, b config.Definition) int { return cmp.Compare(a.Name, b.Name) })
		index = make(map[string]*config.Definition, len(table))
		for i := range table {
			index[table[i].Name] = &table[i]
		}
	})
}

// Definitions returns the mirror properties, sorted by name. The slice is a
// copy; Default points into the table and must not be modified.
func Definitions() []config.Definition {
	loadTable()
	return slices.Clone(table)
}

// Lookup returns the definition of a mirror property.
func Lookup(name string) (config.Definition, bool) {
	loadTable()
	d, ok := index[name]
	if !ok {
		return config.Definition{}, false
	}
	return *d, true
}

// IsSensitive reports whether a property is a secret: its value is never
// returned by a Describe call nor logged. Unknown names count as sensitive,
// so that a typo of a secret's name never exposes the secret.
func IsSensitive(name string) bool {
	d, ok := Lookup(name)
	return !ok || d.Sensitive
}

// checkHostPort accepts host:port with a non-empty host, an IPv6 host in
// brackets, and a port in 1..65535.
func checkHostPort(s string) error {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return fmt.Errorf("%q is not host:port", s)
	}
	host, port := s[:i], s[i+1:]
	if strings.HasPrefix(host, "[") != strings.HasSuffix(host, "]") {
		return fmt.Errorf("%q has an unbalanced [ ] around its host", s)
	}
	if !strings.HasPrefix(host, "[") && strings.Contains(host, ":") {
		return fmt.Errorf("%q: an IPv6 host must be in brackets", s)
	}
	if host == "[]" {
		return fmt.Errorf("%q has an empty host", s)
	}
	n := 0
	for _, c := range port {
		if c < '0' || c > '9' || n > 65535 {
			return fmt.Errorf("%q has an invalid port %q", s, port)
		}
		n = n*10 + int(c-'0')
	}
	if port == "" || n < 1 || n > 65535 {
		return fmt.Errorf("%q has an invalid port %q", s, port)
	}
	return nil
}
