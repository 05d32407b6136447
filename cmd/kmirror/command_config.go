package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/config"
)

// Every client command connects to a secured cluster from a client
// properties file (--command-config, as Kafka's tools take it).

// commandConfigUsage is the help of --command-config.
const commandConfigUsage = "client properties file for a secured cluster: security.protocol, sasl.mechanism, sasl.jaas.config (or sasl.username and sasl.password), ssl.ca.location (or a PEM ssl.truststore.location), ssl.certificate.location and ssl.key.location"

// commandConfigOpts returns the franz-go options the properties file at
// path asks for; none for an empty path. Errors name the property, never a
// secret's value.
func commandConfigOpts(path string) ([]kgo.Opt, error) {
	return propertiesFileOpts("--command-config", path)
}

// propertiesFileOpts reads the client properties file at path, given with
// flag (named in errors), and returns the franz-go options it asks for;
// none for an empty path.
func propertiesFileOpts(flag, path string) ([]kgo.Opt, error) {
	if path == "" {
		return nil, nil
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	list, err := config.ParseProperties(string(text))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	props := map[string]string{}
	for _, p := range list {
		props[p.Key] = p.Value
	}
	opts, err := clientSecurityOpts(props)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return opts, nil
}

// clientSecurityOpts maps Kafka client properties to franz-go options.
func clientSecurityOpts(props map[string]string) ([]kgo.Opt, error) {
	protocol := strings.ToUpper(props["security.protocol"])
	if protocol == "" {
		protocol = auth.ProtocolPlaintext
	}
	var opts []kgo.Opt
	switch protocol {
	case auth.ProtocolPlaintext, auth.ProtocolSSL, auth.ProtocolSASLPlaintext, auth.ProtocolSASLSSL:
	default:
		return nil, fmt.Errorf("security.protocol: unknown protocol %q", props["security.protocol"])
	}
	if auth.UsesTLS(protocol) {
		tc, err := clientTLS(props)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if auth.UsesSASL(protocol) {
		user, pass := props["sasl.username"], props["sasl.password"]
		if j := props["sasl.jaas.config"]; j != "" {
			parsed, err := auth.ParseJAAS(j)
			if err != nil {
				return nil, err
			}
			user, pass = parsed.Options["username"], parsed.Options["password"]
		}
		if user == "" || pass == "" {
			return nil, errors.New("sasl: set sasl.jaas.config with username and password, or sasl.username and sasl.password")
		}
		mech := strings.ToUpper(props["sasl.mechanism"])
		switch mech {
		case "", auth.MechanismPlain:
			opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		case auth.ScramSHA256.Name:
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
		case auth.ScramSHA512.Name:
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("sasl.mechanism: %q is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", props["sasl.mechanism"])
		}
	}
	return opts, nil
}

// clientTLS builds the TLS configuration of a client from PEM files.
func clientTLS(props map[string]string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	caFile := props["ssl.ca.location"]
	if caFile == "" && strings.EqualFold(props["ssl.truststore.type"], "PEM") {
		caFile = props["ssl.truststore.location"]
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("ssl.ca.location: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ssl.ca.location %s: no PEM certificate", caFile)
		}
	}
	certFile, keyFile := props["ssl.certificate.location"], props["ssl.key.location"]
	if certFile == "" && strings.EqualFold(props["ssl.keystore.type"], "PEM") {
		certFile, keyFile = props["ssl.keystore.location"], props["ssl.keystore.location"]
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("ssl.certificate.location/ssl.key.location: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if v, ok := props["ssl.endpoint.identification.algorithm"]; ok && v == "" {
		tc.InsecureSkipVerify = true // host names unchecked; the chain is verified below
		roots := tc.RootCAs
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	}
	return tc, nil
}
