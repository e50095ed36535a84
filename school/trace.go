package school

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/schoolgate/schoolgate/admission"
	"github.com/schoolgate/schoolgate/authserver"
)

// The school's spans (docs/operator.md, "Traces"), children of Caddy's
// request span when its tracing is on: admission, and each call to the
// legacy server — a request sent on by the reverse proxy, or one of the
// school's own (session lookup, an MCP tool's Account API call) — whose
// request carries the call span's traceparent, so that the school's own
// logs join the trace. Caddy's tracing puts the request span's
// traceparent in the request's headers, which the proxy would send on;
// the call's span replaces it with its own, one level down. Without a
// span in the context nothing is started and no header is touched.

// traceContext is the W3C Trace Context propagator: traceparent and
// tracestate, what a legacy server's tracing reads.
var traceContext = propagation.TraceContext{}

// startLegacySpan starts the span of a call to the legacy server and
// puts its traceparent in h.
func startLegacySpan(ctx context.Context, issuer, method, path string, h http.Header) (context.Context, trace.Span) {
	ctx, span := authserver.StartSpan(ctx, "schoolgate legacy call", trace.SpanKindClient)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("http.request.method", method), attribute.String("url.path", path))
		if issuer != "" {
			span.SetAttributes(authserver.AttrSchool.String(issuer))
		}
	}
	traceContext.Inject(ctx, propagation.HeaderCarrier(h))
	return ctx, span
}

// endLegacySpan ends a call's span with its status or error.
func endLegacySpan(span trace.Span, status int, err error) {
	if span.IsRecording() {
		switch {
		case err != nil:
			span.SetStatus(codes.Error, err.Error())
		case status > 0:
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
		}
	}
	span.End()
}

// tracingTransport gives each of the school's own calls its span and
// its traceparent, when the request's context has a span.
type tracingTransport struct {
	base   http.RoundTripper
	issuer string
}

func (t tracingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !trace.SpanFromContext(r.Context()).SpanContext().IsValid() {
		return t.base.RoundTrip(r)
	}
	// A RoundTripper must not change the request it is given.
	r = r.Clone(r.Context())
	ctx, span := startLegacySpan(r.Context(), t.issuer, r.Method, r.URL.Path, r.Header)
	resp, err := t.base.RoundTrip(r.WithContext(ctx))
	if err != nil {
		endLegacySpan(span, 0, err)
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	resp.Body = &spanBody{ReadCloser: resp.Body, end: func() { endLegacySpan(span, 0, nil) }}
	return resp, nil
}

// spanBody ends the call's span when its body is closed.
type spanBody struct {
	io.ReadCloser
	once sync.Once
	end  func()
}

func (b *spanBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.end)
	return err
}

// statusWriter keeps the status a forwarded request was answered with,
// for its span.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer's own methods
// (Flush, deadlines), which the reverse proxy uses.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Attributes of the admission span.
const (
	// attrWaited is how long the request waited for its turn, in
	// seconds (the span's own length, less its start and end).
	attrWaited = attribute.Key("schoolgate.admission.waited")
	// attrRefusal is why a request was not admitted: admission's
	// Refusal.Cause (queue_full, wait), or client_gone.
	attrRefusal = attribute.Key("schoolgate.admission.refusal")
)

// admitTraced asks the instance's fair share for a slot, within a span
// "schoolgate admission" when the request has one: the school, how long
// the request waited, its outcome (admitted or refused) and a refusal's
// cause, the span's status an error on a refusal.
func (s *Site) admitTraced(ctx context.Context) (admission.Slot, error) {
	if !trace.SpanFromContext(ctx).SpanContext().IsValid() {
		return s.cfg.Admission.Admit(ctx)
	}
	ctx, span := authserver.StartSpan(ctx, "schoolgate admission", trace.SpanKindInternal)
	defer span.End()
	if !span.IsRecording() {
		return s.cfg.Admission.Admit(ctx)
	}
	start := time.Now()
	slot, err := s.cfg.Admission.Admit(ctx)
	span.SetAttributes(authserver.AttrSchool.String(s.cfg.Issuer), attrWaited.Float64(time.Since(start).Seconds()))
	if err == nil {
		span.SetAttributes(authserver.AttrOutcome.String("admitted"))
		return slot, nil
	}
	cause := "client_gone"
	var ref *admission.Refusal
	if errors.As(err, &ref) {
		cause = ref.Cause
	}
	span.SetAttributes(authserver.AttrOutcome.String("refused"), attrRefusal.String(cause))
	span.SetStatus(codes.Error, err.Error())
	return slot, err
}
