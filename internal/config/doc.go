// Package config turns a server.properties file, KMIRROR_* environment
// variables and command-line overrides into a validated Config, and holds the
// one table of definitions for kmirror's broker and topic configs (name,
// type, default, validator, importance, documentation, sensitivity, dynamic
// update mode and, for topic configs, the broker synonyms in Kafka's
// precedence).
//
// Names, types, defaults and validation follow Apache Kafka (3.9) wherever
// Kafka has the setting; kmirror's own settings are marked Kmirror in the
// table. The same table drives DescribeConfigs (ResolveTopic, ResolveBroker),
// CreateTopics/AlterConfigs validation (ValidateTopicConfigs,
// ValidateBrokerConfigs) and the generated configuration reference.
package config
