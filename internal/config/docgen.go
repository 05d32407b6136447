package config

//go:generate go test -run ^TestConfigurationReference$ . -args -update

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// ReferencePath is where the rendered reference lives, relative to the
// repository root.
const ReferencePath = "docs/configuration.md"

// WriteReference renders the configuration reference (docs/configuration.md)
// from the definition table: every broker config and every topic config, with
// its type, default, valid values, importance, update mode and text. The
// document is generated so that it cannot drift from what the server
// accepts; a test in this package regenerates it and fails when the
// committed file differs (`go generate ./internal/config` rewrites it).
func WriteReference(w io.Writer) error {
	var b strings.Builder
	b.WriteString(`# Configuration reference

<!-- Generated from the definition table in internal/config by
     "go generate ./internal/config". Do not edit: a test fails when this
     file and the table disagree. -->

kmirror takes Apache Kafka's config names wherever Kafka has the setting, with
Kafka's types, defaults and validation; its own settings are marked
**kmirror only**. See the [operator's guide](operations.md) for how to run
nodes, and [security.md](security.md) for TLS, SASL and ACLs.

## Where settings come from

A node reads its broker configs, in increasing precedence, from:

1. the defaults below — without a ` + "`--config`" + ` file, a few defaults are those of a
   single-node cluster instead (marked *single-node default*);
2. the properties file given with ` + "`kmirror server --config FILE`" + `;
3. ` + "`KMIRROR_*`" + ` environment variables: ` + "`KMIRROR_LOG_DIRS`" + ` sets ` + "`log.dirs`" + `
   (the name upper-cased, "." as "_", "_" as "__");
4. ` + "`--override key=value`" + ` (repeatable);
5. the dedicated flags ` + "`--node-id`, `--listeners`, `--log-dirs`" + `.

An unknown key is reported as a warning and ignored; an invalid value stops
the start with a message naming the key. Configs whose update mode is
*per-broker* or *cluster-wide* can also be changed at run time with
IncrementalAlterConfigs (for example ` + "`kafka-configs.sh --alter --entity-type brokers`" + `);
*read-only* ones take effect at the next start. A per-listener setting is
written ` + "`listener.name.<listener>.<config>`" + ` (lower-case listener name).

Topic configs are set per topic (` + "`kmirror topic create --config`" + `,
` + "`kmirror topic alter-config --set`" + `); a topic without its own value takes
the broker config named as its *server default*, then the default below.

`)
	defs := Definitions()
	var broker, topic []Definition
	for _, d := range defs {
		if d.Scope == TopicScope {
			topic = append(topic, d)
		} else {
			broker = append(broker, d)
		}
	}
	writeScope(&b, "Broker configs", broker)
	writeScope(&b, "Topic configs", topic)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeScope writes one scope's configs, most important first and by name
// within an importance, as Kafka's documentation orders them.
func writeScope(b *strings.Builder, title string, defs []Definition) {
	fmt.Fprintf(b, "## %s\n\n", title)
	slices.SortStableFunc(defs, func(x, y Definition) int {
		if x.Importance != y.Importance {
			return int(x.Importance) - int(y.Importance)
		}
		return strings.Compare(x.Name, y.Name)
	})
	// An index first, per importance, so that a reader finds a name
	// quickly.
	byImportance := map[Importance][]string{}
	for _, d := range defs {
		byImportance[d.Importance] = append(byImportance[d.Importance], "[`"+d.Name+"`](#"+anchor(d.Name)+")")
	}
	for _, imp := range []Importance{High, Medium, Low} {
		if names := byImportance[imp]; len(names) > 0 {
			fmt.Fprintf(b, "**%s importance:** %s\n\n", capitalize(imp.String()), strings.Join(names, " · "))
		}
	}
	for i, d := range defs {
		if i == 0 || defs[i-1].Importance != d.Importance {
			fmt.Fprintf(b, "### %s importance\n\n", capitalize(d.Importance.String()))
		}
		writeDefinition(b, d)
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// anchor is the heading anchor a Markdown renderer derives from a config
// name: lower case, dots and other punctuation removed.
func anchor(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func writeDefinition(b *strings.Builder, d Definition) {
	fmt.Fprintf(b, "#### %s\n\n", d.Name)
	doc := strings.TrimSpace(d.Doc)
	if d.Kmirror {
		doc = "**kmirror only.** " + capitalize(strings.TrimPrefix(doc, "kmirror: "))
	}
	b.WriteString(doc + "\n\n")
	row := func(k, v string) { fmt.Fprintf(b, "| %s | %s |\n", k, v) }
	b.WriteString("| | |\n| --- | --- |\n")
	row("type", d.Type.String())
	row("default", defaultText(d))
	if p, ok := singleNodeProfile[d.Name]; ok && d.Scope == BrokerScope {
		row("single-node default", "`"+p+"` (when no `--config` file is given)")
	}
	if v := d.ValidValues(); v != "" {
		row("valid values", mdCell(v))
	}
	row("importance", d.Importance.String())
	if d.Scope == BrokerScope {
		row("update mode", d.Update.String())
		row("environment", "`"+EnvName(d.Name)+"`")
	} else if len(d.Synonyms) > 0 {
		syn := make([]string, len(d.Synonyms))
		for i, s := range d.Synonyms {
			syn[i] = "`" + s + "`"
		}
		row("server default", strings.Join(syn, ", "))
	}
	if d.Sensitive {
		row("sensitive", "yes: never returned by DescribeConfigs nor logged")
	}
	if d.Internal {
		row("set by", "kmirror only (the mirror APIs); CreateTopics and AlterConfigs refuse it")
	}
	b.WriteString("\n")
}

// defaultText renders a default for the table: null, an empty string, or
// the value as code.
func defaultText(d Definition) string {
	switch {
	case d.Default == nil:
		return "null"
	case *d.Default == "":
		return `"" (empty)`
	}
	return "`" + mdCell(*d.Default) + "`"
}

// mdCell escapes what would break a Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
