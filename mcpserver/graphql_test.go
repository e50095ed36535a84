package mcpserver

import (
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
)

func TestOperationOf(t *testing.T) {
	tests := []struct {
		name, query string
		want        ast.Operation
		wantErr     string
	}{
		{"shorthand", `{ viewer { id } }`, ast.Query, ""},
		{"named query with variables", `query Q($n: Int = 5) { viewer { enrolledCourses(first: $n) { nodes { slug } } } }`, ast.Query, ""},
		{"query with fragment", `query { viewer { ...F } } fragment F on Viewer { id }`, ast.Query, ""},
		{"comment and description", "# hi\n\"doc\" query { viewer { id } }", ast.Query, ""},
		{"mutation", `mutation { cancel(id: 1) { ok } }`, ast.Mutation, ""},
		{"mutation keyword in a string is a query", `{ search(q: "mutation { x }") { id } }`, ast.Query, ""},
		{"subscription", `subscription { s }`, ast.Subscription, ""},
		{"empty", ``, "", "no operation"},
		{"fragments only", `fragment F on V { id }`, "", "no operation"},
		{"two operations", `query A { a } mutation B { b }`, "", "exactly one"},
		{"unbalanced", `{ viewer { id }`, "", "syntax"},
		{"schema definition", `type Query { a: Int }`, "", "syntax"},
		{"too long", `{ a }` + strings.Repeat(" ", maxQueryBytes), "", "longer"},
		{"too many tokens", `{ ` + strings.Repeat("a ", maxQueryTokens) + `}`, "", "token limit"},
		{"too deep", strings.Repeat("{ a ", 2000) + strings.Repeat("}", 2000), "", "syntax"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := operationOf(tt.query)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func FuzzOperationOf(f *testing.F) {
	for _, s := range []string{`{ viewer { id } }`, `mutation { a }`, `query A { a } query B { b }`, `subscription{s}`, `fragment F on V { id } mutation { ...F }`, `{ a(b: [1, {c: "d"}]) }`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		op, err := operationOf(q)
		if err != nil {
			return
		}
		switch op {
		case ast.Query, ast.Mutation, ast.Subscription:
		default:
			t.Fatalf("operation %q accepted", op)
		}
		// A document the gateway calls a query must not be able to run a
		// mutation upstream: the only operation in it is a query.
		if op == ast.Query && strings.HasPrefix(strings.TrimSpace(q), "mutation") {
			t.Fatalf("mutation classified as query: %q", q)
		}
	})
}
