package quorum

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter routes hashicorp/raft's hclog output into slog. Messages
// below level are dropped before formatting; raft is chatty at info level
// (every election, every snapshot), so the default is warn.
type hclogAdapter struct {
	l       *slog.Logger
	name    string
	level   hclog.Level
	implied []any
}

func newHCLogAdapter(l *slog.Logger, level slog.Leveler) *hclogAdapter {
	return &hclogAdapter{l: l, name: "raft", level: toHCLevel(level.Level())}
}

func toHCLevel(l slog.Level) hclog.Level {
	switch {
	case l <= slog.LevelDebug-4:
		return hclog.Trace
	case l <= slog.LevelDebug:
		return hclog.Debug
	case l <= slog.LevelInfo:
		return hclog.Info
	case l <= slog.LevelWarn:
		return hclog.Warn
	}
	return hclog.Error
}

func toSlogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	if level < a.level || a.level == hclog.Off {
		return
	}
	attrs := make([]any, 0, len(a.implied)+len(args)+2)
	attrs = append(attrs, "component", a.name)
	attrs = append(attrs, a.implied...)
	attrs = append(attrs, args...)
	a.l.Log(context.Background(), toSlogLevel(level), msg, attrs...)
}

func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) IsTrace() bool { return a.level <= hclog.Trace }
func (a *hclogAdapter) IsDebug() bool { return a.level <= hclog.Debug }
func (a *hclogAdapter) IsInfo() bool  { return a.level <= hclog.Info }
func (a *hclogAdapter) IsWarn() bool  { return a.level <= hclog.Warn }
func (a *hclogAdapter) IsError() bool { return a.level <= hclog.Error }

func (a *hclogAdapter) ImpliedArgs() []any { return a.implied }

func (a *hclogAdapter) With(args ...any) hclog.Logger {
	c := *a
	c.implied = append(append([]any(nil), a.implied...), args...)
	return &c
}

func (a *hclogAdapter) Name() string { return a.name }

func (a *hclogAdapter) Named(name string) hclog.Logger {
	c := *a
	if c.name != "" {
		c.name += "." + name
	} else {
		c.name = name
	}
	return &c
}

func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	c := *a
	c.name = name
	return &c
}

// SetLevel changes only this adapter value's level; raft never calls it.
func (a *hclogAdapter) SetLevel(level hclog.Level) { a.level = level }
func (a *hclogAdapter) GetLevel() hclog.Level      { return a.level }

func (a *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

func (a *hclogAdapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	level := hclog.Info
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = opts.ForceLevel
	}
	return &hclogWriter{a: a, level: level}
}

// hclogWriter logs each line written to it (the standard library logger
// interface some hashicorp code uses).
type hclogWriter struct {
	a     *hclogAdapter
	level hclog.Level
}

func (w *hclogWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(string(bytes.TrimRight(p, "\n")), "\n") {
		w.a.Log(w.level, line)
	}
	return len(p), nil
}
