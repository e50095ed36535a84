package caddymodule

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/schoolgate/schoolgate/school"
)

// handlerLogger is the proxy's logger, read as lazyProxyLog writes it.
func handlerLogger(t testing.TB, h *reverseproxy.Handler) *zap.Logger {
	off, ok := proxyLogger()
	if !ok {
		t.Fatal("reverseproxy.Handler has no logger *zap.Logger field: this Caddy's proxies log eagerly again")
	}
	return *(**zap.Logger)(unsafe.Add(unsafe.Pointer(h), off))
}

// The App's proxies encode the fields of their round trips' loggers only
// for an entry written.
func TestProxyLogLazy(t *testing.T) {
	ctx, err := caddy.ProvisionContext(&caddy.Config{AppsRaw: caddy.ModuleMap{appName: json.RawMessage(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	app, err := ctx.App(appName)
	if err != nil {
		t.Fatal(err)
	}
	defer app.(*App).Cleanup()
	h, err := app.(*App).proxy(ctx, mustProxyJSON(t, "http://127.0.0.1:9"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := handlerLogger(t, h).Core().(*lazyCore); !ok {
		t.Fatalf("the proxy's logger core is %T, not lazy", handlerLogger(t, h).Core())
	}
}

// countingObject counts its encodings.
type countingObject struct{ n *int }

func (o countingObject) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	*o.n++
	enc.AddString("method", "POST")
	return nil
}

// A lazy core writes what an eager one writes, fields in order, and
// encodes nothing for an entry below its level, through any number of
// Withs (the proxy's per-read With on the round trip's logger).
func TestLazyCore(t *testing.T) {
	for _, level := range []zapcore.Level{zapcore.InfoLevel, zapcore.DebugLevel} {
		t.Run(level.String(), func(t *testing.T) {
			var out, eagerOut strings.Builder
			enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "msg"})
			var encoded, eagerEncoded int
			// logAll logs as the proxy does and returns how many times the
			// request was encoded before the first entry written at level.
			logAll := func(base zapcore.Core, lazy bool, n *int) int {
				core := base
				if lazy {
					core = &lazyCore{base: base}
				}
				l := zap.New(core).
					With(zap.String("upstream", "127.0.0.1:9"), zap.Object("request", countingObject{n})).
					With(zap.Int("read", 7))
				if c := l.Check(zapcore.DebugLevel, "read from upstream"); c != nil {
					c.Write(zap.Error(nil))
				}
				before := *n
				l.Info("aborting with incomplete response", zap.Bool("last", true))
				return before
			}
			lazyBefore := logAll(zapcore.NewCore(enc.Clone(), zapcore.AddSync(&out), level), true, &encoded)
			eagerBefore := logAll(zapcore.NewCore(enc.Clone(), zapcore.AddSync(&eagerOut), level), false, &eagerEncoded)
			if out.String() != eagerOut.String() {
				t.Errorf("lazy wrote\n%s\neager wrote\n%s", out.String(), eagerOut.String())
			}
			if !strings.Contains(out.String(), `"msg":"aborting with incomplete response","upstream":"127.0.0.1:9","request":{"method":"POST"},"read":7,"last":true}`) {
				t.Errorf("wrote %s", out.String())
			}
			// Eager: encoded once by the first With, again by the second
			// (the copy of the encoder carries the bytes, the object is
			// not encoded again). Lazy: once per entry written.
			if want := strings.Count(out.String(), "\n"); encoded != want {
				t.Errorf("the request was encoded %d times for %d entries written", encoded, want)
			}
			if level == zapcore.InfoLevel && (lazyBefore != 0 || eagerBefore == 0) {
				t.Errorf("for a debug entry not written the request was encoded %d times (eager: %d)", lazyBefore, eagerBefore)
			}
			l := zap.New(&lazyCore{base: zapcore.NewCore(enc, zapcore.AddSync(&out), level)})
			if !l.Core().Enabled(level) || l.Core().Enabled(level-1) {
				t.Error("the lazy core's level is not its base's")
			}
		})
	}
}

// BenchmarkProxyRoundTripLog is what Caddy's reverse_proxy does with its
// logger on each protected request (a With of the upstream request, two
// reads of the answer with a With each, debug entries checked and not
// written, at Caddy's default level), with Caddy's own logger and with
// the lazy one the App's proxies get: with the identity headers, the
// identity assertion, or neither.
func BenchmarkProxyRoundTripLog(b *testing.B) {
	ctx, err := caddy.ProvisionContext(&caddy.Config{AppsRaw: caddy.ModuleMap{appName: json.RawMessage(`{}`)}})
	if err != nil {
		b.Fatal(err)
	}
	eager := ctx.Logger(reverseproxy.Handler{})
	lazy := eager.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return &lazyCore{base: c} }))
	headers := map[string]http.Header{"plain": {}, "assertion": {school.AssertionHeader: {strings.Repeat("a", 620)}}, "identity-headers": {}}
	for _, name := range school.IdentityHeaders {
		headers["identity-headers"][name] = []string{"member-1 student@bench.example"}
	}
	for _, hname := range []string{"plain", "identity-headers", "assertion"} {
		for _, lname := range []string{"caddy", "lazy"} {
			logger := map[string]*zap.Logger{"caddy": eager, "lazy": lazy}[lname]
			b.Run(hname+"/"+lname, func(b *testing.B) {
				r := httptest.NewRequest("POST", "http://127.0.0.1:9/account/graphql", nil)
				r.Header = http.Header{"User-Agent": {"Go-http-client/1.1"}, "Content-Type": {"application/json"},
					"Content-Length": {"86"}, "Accept-Encoding": {"gzip"}, "X-Forwarded-For": {"127.0.0.1"},
					"X-Forwarded-Host": {"127.0.0.1:8080"}, "X-Forwarded-Proto": {"http"}, "Via": {"1.1 Caddy"}}
				for k, v := range headers[hname] {
					r.Header[k] = v
				}
				b.ReportAllocs()
				for b.Loop() {
					l := logger.With(zap.String("upstream", "127.0.0.1:9"), zap.Duration("duration", time.Millisecond),
						zap.Object("request", caddyhttp.LoggableHTTPRequest{Request: r}))
					if c := l.Check(zapcore.DebugLevel, "upstream roundtrip"); c != nil {
						c.Write()
					}
					for range 2 {
						rl := l.With(zap.Int("read", 160))
						if c := rl.Check(zapcore.DebugLevel, "read from upstream"); c != nil {
							c.Write()
						}
					}
				}
			})
		}
	}
}
