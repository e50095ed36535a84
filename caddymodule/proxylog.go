package caddymodule

import (
	"reflect"
	"sync"
	"unsafe"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Caddy's reverse_proxy makes, for every round trip, a logger With the
// upstream request (its method, URI and every header) and, for every
// read of the answer's body, one With the bytes read, for debug entries
// ("upstream roundtrip", "read from upstream") that a logger below debug
// level never writes. zap's own cores encode a With's fields at once,
// so each protected request paid for its headers JSON-encoded into a
// buffer, for nothing: 4–5 µs of Caddy's CPU a request through plain
// reverse_proxy, 8–9 µs with the identity assertion (a header of 600
// bytes, escaped byte by byte), the largest part of the gateway's cost
// over plain reverse_proxy (BENCHMARKS.md, "The protected request's cost,
// found"). Caddy's server logs its own request lazily (WithLazy) for the
// same reason; its proxy does not, and its logger is not ours to
// configure. So the gateway's proxies (pooled, provisioned by the App)
// get a logger whose Withs keep their fields and encode them only for an
// entry that is written: at debug level the same entries, with the same
// fields, are written as before.

// proxyLogger is the offset of reverseproxy.Handler's logger, which
// Provision sets from its context; ok is false if this Caddy's handler
// has no such field, and its proxies are then left as Caddy made them
// (TestProxyLogLazy fails, for whoever upgrades Caddy to look).
var proxyLogger = sync.OnceValues(func() (uintptr, bool) {
	f, ok := reflect.TypeFor[reverseproxy.Handler]().FieldByName("logger")
	if !ok || f.Type != reflect.TypeFor[*zap.Logger]() {
		return 0, false
	}
	return f.Offset, true
})

// lazyProxyLog makes a provisioned proxy's logger encode the fields of
// its Withs only for an entry written; it reports whether it could.
func lazyProxyLog(h *reverseproxy.Handler) bool {
	off, ok := proxyLogger()
	if !ok {
		return false
	}
	p := (**zap.Logger)(unsafe.Add(unsafe.Pointer(h), off))
	if *p == nil {
		return false
	}
	*p = (*p).WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return &lazyCore{base: c} }))
	return true
}

// lazyCore is base with fields added by With but not yet encoded: they
// are, into base, when an entry is to be written. Unlike zap's
// NewLazyWith, a With on it stays lazy (the proxy's per-read With on the
// round trip's logger would otherwise encode the request after all): it
// links to the core it was made from, whose fields come first.
type lazyCore struct {
	base   zapcore.Core
	parent *lazyCore
	fields []zapcore.Field
}

func (c *lazyCore) Enabled(l zapcore.Level) bool { return c.base.Enabled(l) }

func (c *lazyCore) With(fields []zapcore.Field) zapcore.Core {
	if len(fields) == 0 {
		return c
	}
	return &lazyCore{base: c.base, parent: c, fields: fields}
}

// encoded is base with the fields: what eager Withs would have made.
func (c *lazyCore) encoded() zapcore.Core {
	var chain []*lazyCore
	n := 0
	for l := c; l != nil; l = l.parent {
		chain = append(chain, l)
		n += len(l.fields)
	}
	if n == 0 {
		return c.base
	}
	all := make([]zapcore.Field, 0, n)
	for i := len(chain) - 1; i >= 0; i-- {
		all = append(all, chain[i].fields...)
	}
	return c.base.With(all)
}

func (c *lazyCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !c.base.Enabled(e.Level) {
		return ce
	}
	return c.encoded().Check(e, ce)
}

func (c *lazyCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	return c.encoded().Write(e, fields)
}

func (c *lazyCore) Sync() error { return c.base.Sync() }
