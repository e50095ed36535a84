package caddymodule

import (
	"log/slog"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap/exp/zapslog"
)

// auditLoggerName is the logger of every school's audit events, so that
// an operator routes them with Caddy's own log configuration (include or
// exclude it by this name).
const auditLoggerName = "schoolgate.audit"

// auditLogger is Caddy's logger of the audit events: the logs of the
// config that include its name (or include everything) write them.
func auditLogger(ctx caddy.Context) *slog.Logger {
	return slog.New(zapslog.NewHandler(ctx.Logger(auditLogModule{}).Core(), zapslog.WithName(auditLoggerName)))
}

// auditLogModule names the audit logger as Caddy's logging names a
// module's, which is what its include and exclude options match. It is
// never registered: it only gives the name.
type auditLogModule struct{}

func (auditLogModule) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: auditLoggerName, New: func() caddy.Module { return auditLogModule{} }}
}

// requestID is Caddy's id of the request ({http.request.uuid}), which
// also puts it in the request's access log line, so that an audit event
// and its request are found together. Outside a Caddy server (tests) it
// is empty.
func requestID(r *http.Request) string {
	if _, ok := r.Context().Value(caddyhttp.ExtraLogFieldsCtxKey).(*caddyhttp.ExtraLogFields); !ok {
		return ""
	}
	repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if !ok {
		return ""
	}
	v, _ := repl.GetString("http.request.uuid")
	return v
}
