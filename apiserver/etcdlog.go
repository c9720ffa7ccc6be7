package apiserver

import (
	"context"
	"log/slog"
	"slices"
	"sort"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newZapToSlog is a zap logger (what etcd's server and client log with)
// that writes entries at min and above to log: Warn as Warn, Error and
// worse as Error, with etcd's fields as attributes. A Fatal entry is
// written before zap exits the process, so an etcd that gives up says why.
func newZapToSlog(log *slog.Logger, min zapcore.Level) *zap.Logger {
	return zap.New(&slogCore{log: log, min: min})
}

type slogCore struct {
	log   *slog.Logger
	min   zapcore.Level
	attrs []slog.Attr // from With
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= c.min }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{log: c.log, min: c.min, attrs: append(slices.Clone(c.attrs), zapAttrs(fields)...)}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// ignoredWarnings are etcd's start-up warnings about setups the embedded
// etcd does not have: one socket for gRPC and HTTP (the apiserver is its
// only client) and simple auth tokens (etcd auth is off).
var ignoredWarnings = map[string]bool{
	"Running http and grpc server on single port. This is not recommended for production.": true,
	"simple token is not cryptographically signed":                                         true,
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if e.Level == zapcore.WarnLevel && ignoredWarnings[e.Message] {
		return nil
	}
	level := slog.LevelInfo
	switch {
	case e.Level == zapcore.WarnLevel:
		level = slog.LevelWarn
	case e.Level >= zapcore.ErrorLevel:
		level = slog.LevelError
	}
	attrs := append(slices.Clone(c.attrs), zapAttrs(fields)...)
	if e.Level > zapcore.ErrorLevel {
		attrs = append(attrs, slog.String("etcdLevel", e.Level.String()))
	}
	if e.LoggerName != "" {
		attrs = append(attrs, slog.String("logger", e.LoggerName))
	}
	c.log.LogAttrs(context.Background(), level, e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

// zapAttrs turns zap fields into slog attributes, sorted by key.
func zapAttrs(fields []zapcore.Field) []slog.Attr {
	if len(fields) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		out = append(out, slog.Any(k, enc.Fields[k]))
	}
	return out
}
