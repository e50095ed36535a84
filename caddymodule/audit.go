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

// auditLogger is Caddy's logger of the audit events.
func auditLogger() *slog.Logger {
	return slog.New(zapslog.NewHandler(caddy.Log().Named(auditLoggerName).Core(),
		zapslog.WithName(auditLoggerName)))
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
