package pgstore

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

// A store call under a request's span is a child span naming what it
// does, and a transaction's commit a child of that; without a span,
// none.
func TestTraceStoreCalls(t *testing.T) {
	p := connect(t, pgcluster.Database(t))
	s := siteOf(t, p, "https://traced.example")
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, parent := tp.Tracer("caddy").Start(testContext(t), "caddy request")
	if err := s.AddSteps(ctx, []store.Step{{ClientID: "app", Name: "token", Count: 1, First: epoch, Last: epoch}}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	var call, commit *tracetest.SpanStub
	spans := exp.GetSpans()
	for i := range spans {
		switch spans[i].Name {
		case "schoolgate store":
			call = &spans[i]
		case "schoolgate store commit":
			commit = &spans[i]
		}
	}
	if call == nil || commit == nil {
		t.Fatalf("spans %v", spans)
	}
	if call.Parent.SpanID() != parent.SpanContext().SpanID() || commit.Parent.SpanID() != call.SpanContext.SpanID() {
		t.Errorf("parents: store %v, commit %v", call.Parent.SpanID(), commit.Parent.SpanID())
	}
	attrs := map[string]string{}
	for _, a := range call.Attributes {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	if attrs["db.system.name"] != "postgresql" || attrs["db.operation.name"] != "adding connection steps" {
		t.Errorf("attributes %v", attrs)
	}
	exp.Reset()
	if _, err := s.QuerySteps(testContext(t), store.StepQuery{ClientID: "app"}); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d spans without a request span", n)
	}
}
