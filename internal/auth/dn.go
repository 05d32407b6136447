package auth

import (
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf16"
)

// attributeValue is one attribute of a distinguished name, its value kept
// as DER so that values of unknown types can be printed as #hex.
type attributeValue struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// relativeNameSET is one RDN; encoding/asn1 reads a type whose name ends in
// SET as an ASN.1 SET.
type relativeNameSET []attributeValue

// rfc2253Keywords are the attribute types Java's X500Principal names in its
// RFC 2253 form; any other type is printed as its dotted OID.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// DistinguishedName formats a certificate's raw subject (or issuer) in the
// RFC 2253 form Kafka's principals use, as Java's
// X500Principal.getName() prints it: the RDNs from last to first, separated
// by ',', multi-valued RDNs joined with '+', keyword types by name, other
// types as dotted OIDs with a #hex DER value, special characters escaped
// with a backslash. "CN=alice,OU=eng,O=example".
func DistinguishedName(rawSubject []byte) (string, error) {
	var seq []relativeNameSET
	rest, err := asn1.Unmarshal(rawSubject, &seq)
	if err != nil {
		return "", fmt.Errorf("certificate subject: %w", err)
	}
	if len(rest) > 0 {
		return "", fmt.Errorf("certificate subject: %d trailing bytes", len(rest))
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i < len(seq)-1 {
			b.WriteByte(',')
		}
		for j, av := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			oid := av.Type.String()
			kw, known := rfc2253Keywords[oid]
			s, isString := stringValue(av.Value)
			if known && isString {
				b.WriteString(kw)
				b.WriteByte('=')
				b.WriteString(escapeDNValue(s))
				continue
			}
			if known {
				b.WriteString(kw)
			} else {
				b.WriteString(oid)
			}
			b.WriteString("=#")
			b.WriteString(hex.EncodeToString(av.Value.FullBytes))
		}
	}
	return b.String(), nil
}

// stringValue decodes a DER string of the types names use.
func stringValue(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagT61String, asn1.TagNumericString:
		return string(v.Bytes), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}

// escapeDNValue escapes an attribute value per RFC 2253 section 2.4.
func escapeDNValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case strings.IndexByte(`,+"\<>;`, c) >= 0,
			i == 0 && (c == '#' || c == ' '),
			i == len(s)-1 && c == ' ':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}
