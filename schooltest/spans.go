package schooltest

import (
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// SpanNamed returns the first span named name among those an in-memory
// exporter collected, failing the test, with the names there are,
// without one.
func SpanNamed(t testing.TB, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var names []string
	for _, s := range spans {
		if s.Name == name {
			return s
		}
		names = append(names, s.Name)
	}
	t.Fatalf("no span %q among %v", name, names)
	return tracetest.SpanStub{}
}
