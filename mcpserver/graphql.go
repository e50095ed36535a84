package mcpserver

import (
	"errors"
	"fmt"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// Bounds on an agent's GraphQL document. They keep a hostile query from
// costing the gateway much before the upstream sees it; real queries are a
// few hundred tokens.
const (
	maxQueryBytes  = 64 << 10
	maxQueryTokens = 10000
)

// operationOf parses a GraphQL document and returns the type of its single
// operation. The gateway only needs to know whether the query writes: it
// has no schema, and the upstream validates everything else.
func operationOf(query string) (ast.Operation, error) {
	if len(query) > maxQueryBytes {
		return "", fmt.Errorf("the query is longer than %d bytes", maxQueryBytes)
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Name: "query", Input: query}, maxQueryTokens)
	if err != nil {
		return "", fmt.Errorf("GraphQL syntax error: %v", err)
	}
	switch len(doc.Operations) {
	case 0:
		return "", errors.New("the document has no operation; send one query, e.g. { viewer { id email } }")
	case 1:
		return doc.Operations[0].Operation, nil
	default:
		// Without an operationName argument the upstream could not choose,
		// and checking only the one it might run would be unsound.
		return "", errors.New("send exactly one operation per call")
	}
}
