package config

import (
	"fmt"
	"os"
	"strings"
)

// EnvPrefix starts the environment variables that set configs.
const EnvPrefix = "KMIRROR_"

// ConfigNameFromEnv maps an environment variable name to a config name:
// KMIRROR_NODE_ID → node.id. After the prefix, the name is lower-cased, "__"
// stands for "_" and "_" for ".". ok is false without the prefix.
func ConfigNameFromEnv(variable string) (name string, ok bool) {
	rest, ok := strings.CutPrefix(variable, EnvPrefix)
	if !ok || rest == "" {
		return "", false
	}
	rest = strings.ToLower(rest)
	rest = strings.ReplaceAll(rest, "__", "\x00")
	rest = strings.ReplaceAll(rest, "_", ".")
	return strings.ReplaceAll(rest, "\x00", "_"), true
}

// EnvName maps a config name to its environment variable: node.id →
// KMIRROR_NODE_ID, listener.name.sasl_ssl.x → KMIRROR_LISTENER_NAME_SASL__SSL_X.
func EnvName(config string) string {
	s := strings.ReplaceAll(config, "_", "__")
	s = strings.ReplaceAll(s, ".", "_")
	return EnvPrefix + strings.ToUpper(s)
}

// Load builds and validates the node's configuration from, in increasing
// precedence: the defaults, the properties file (none when file is ""),
// the KMIRROR_* variables in env (os.Environ() form, "NAME=value"), and
// overrides (what the command line sets, e.g. from --override k=v).
//
// Without a file, kmirror's single-node defaults apply: replication factor
// 1 for the internal topics (see the definitions' docs).
//
// Unknown keys come back as warnings, not errors. Invalid values are errors
// naming the key, the value and the rule ("log.segment.bytes: 12 is below
// the minimum 14"); all of them are reported at once, joined.
func Load(file string, env []string, overrides map[string]string) (*Config, []string, error) {
	static := map[string]string{}
	origins := map[string]string{}
	var profile map[string]string
	if file != "" {
		text, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, fmt.Errorf("read config file: %w", err)
		}
		props, err := ParseProperties(string(text))
		if err != nil {
			return nil, nil, fmt.Errorf("parse %s: %w", file, err)
		}
		for _, p := range props {
			static[p.Key] = p.Value
			origins[p.Key] = fmt.Sprintf("file %s:%d", file, p.Line)
		}
	} else {
		profile = singleNodeProfile
	}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if name, ok := ConfigNameFromEnv(k); ok {
			static[name] = v
			origins[name] = "environment " + k
		}
	}
	for k, v := range overrides {
		static[k] = v
		origins[k] = "override"
	}
	return build(profile, static, origins, nil, nil)
}
