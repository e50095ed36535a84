package demoschool

import (
	_ "embed"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
)

//go:embed schema.graphql
var schemaSDL string

// accountSchema is parsed once; a broken schema.graphql fails at start-up
// and in every test.
var accountSchema = gqlparser.MustLoadSchema(&ast.Source{Name: "schema.graphql", Input: schemaSDL})

// maxGraphQLBody bounds the request body. It also bounds the parser's
// recursion depth, which grows with nesting in the query text.
const maxGraphQLBody = 64 << 10

// gqlRequest is the GraphQL-over-HTTP request body.
type gqlRequest struct {
	Query         string         `json:"query"`
	Variables     map[string]any `json:"variables"`
	OperationName string         `json:"operationName"`
}

// graphql serves POST /account/graphql for the member the gateway names in
// X-School-Subject. The gateway has already checked the token; this server
// never sees it.
func (s *school) graphql(w http.ResponseWriter, r *http.Request) {
	defer func() {
		// Malformed input must never take the server down; a panic here is a
		// bug, answered as one.
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			log.Printf("demoschool: panic in /account/graphql: %v", v)
			writeGQLErrors(w, http.StatusInternalServerError, "internal error")
		}
	}()
	noStore(w)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeGQLErrors(w, http.StatusMethodNotAllowed, "use POST with a JSON body")
		return
	}
	user := s.users.bySubject(r.Header.Get("X-School-Subject"))
	if user == nil {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"errors": []map[string]any{{
			"message":    "no member: the X-School-Subject header is missing or names nobody",
			"extensions": map[string]string{"code": "UNAUTHENTICATED"},
		}}})
		return
	}
	var req gqlRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxGraphQLBody))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		writeGQLErrors(w, http.StatusBadRequest, "the body is not a GraphQL request: "+bodyError(err))
		return
	}
	if req.Query == "" {
		writeGQLErrors(w, http.StatusBadRequest, "the body has no query")
		return
	}
	writeJSON(w, http.StatusOK, s.execute(user, req))
}

func bodyError(err error) string {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return "larger than 64 KiB"
	}
	if errors.Is(err, io.EOF) {
		return "empty"
	}
	return err.Error()
}

// gqlResponse is a GraphQL result. Data is left out entirely when the
// request never reached execution, as the GraphQL spec asks.
type gqlResponse struct {
	Data   any           `json:"data,omitempty"`
	Errors gqlerror.List `json:"errors,omitempty"`
}

// execute parses, validates and runs one request for user.
func (s *school) execute(user *User, req gqlRequest) gqlResponse {
	doc, err := parser.ParseQuery(&ast.Source{Name: "request", Input: req.Query})
	if err != nil {
		return gqlResponse{Errors: gqlerror.List{asGQLError(err)}}
	}
	if errs := validator.ValidateWithRules(accountSchema, doc, nil); len(errs) > 0 {
		return gqlResponse{Errors: errs}
	}
	op, err := chooseOperation(doc, req.OperationName)
	if err != nil {
		return gqlResponse{Errors: gqlerror.List{asGQLError(err)}}
	}
	vars, err := validator.VariableValues(accountSchema, op, req.Variables)
	if err != nil {
		return gqlResponse{Errors: gqlerror.List{asGQLError(err)}}
	}
	x := &execution{doc: doc, vars: vars}
	var root gqlObject
	switch op.Operation {
	case ast.Query:
		root = gqlQuery{viewer: &gqlViewer{user: user, account: s.accounts.get(user.Sub)}}
	case ast.Mutation:
		root = gqlMutation{school: s, user: user}
	default:
		return gqlResponse{Errors: gqlerror.List{gqlerror.Errorf("%s operations are not supported", op.Operation)}}
	}
	data, err := x.selectionSet(op.SelectionSet, root, nil)
	if err != nil {
		// Every root field is non-null, so any field error nulls the whole
		// result (GraphQL's null propagation, taken to its end).
		return gqlResponse{Data: json.RawMessage("null"), Errors: gqlerror.List{asGQLError(err)}}
	}
	return gqlResponse{Data: data}
}

func chooseOperation(doc *ast.QueryDocument, name string) (*ast.OperationDefinition, error) {
	if name == "" {
		if len(doc.Operations) != 1 {
			return nil, errors.New("the document has several operations; name one in operationName")
		}
		return doc.Operations[0], nil
	}
	op := doc.Operations.ForName(name)
	if op == nil {
		return nil, gqlerror.Errorf("no operation named %q in the document", name)
	}
	return op, nil
}

func asGQLError(err error) *gqlerror.Error {
	var ge *gqlerror.Error
	if errors.As(err, &ge) {
		return ge
	}
	return gqlerror.Wrap(err)
}

func writeGQLErrors(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, gqlResponse{Errors: gqlerror.List{{Message: msg}}})
}
