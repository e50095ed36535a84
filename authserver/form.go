package authserver

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/schoolgate/schoolgate/store"
)

const maxFormBytes = 64 << 10

// readForm parses an application/x-www-form-urlencoded POST body with a
// size cap, refusing repeated parameters (RFC 6749 §3.2) and query-string
// parameters, which would leak into logs.
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, *oauthError) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		return nil, &oauthError{Status: http.StatusMethodNotAllowed, Code: "invalid_request", Description: "use POST"}
	}
	// The type as clients send it needs no parsing (which allocates).
	if ct := r.Header.Get("Content-Type"); ct != formType {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != formType {
			return nil, errInvalidRequest("the body must be application/x-www-form-urlencoded")
		}
	}
	if r.URL.RawQuery != "" {
		return nil, errInvalidRequest("parameters belong in the body, not the query string")
	}
	// The body is parsed here rather than by Request.ParseForm, which
	// would parse the type again and copy every value into r.Form: with
	// no query string, r.Form is the body's form, the same map.
	if r.Body == nil {
		return nil, errInvalidRequest("the body could not be parsed as a form")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, errInvalidRequest("the body could not be parsed as a form")
	}
	form, err := parseForm(string(body))
	if err != nil {
		return nil, errInvalidRequest("the body could not be parsed as a form")
	}
	r.PostForm, r.Form = form, form
	for k, v := range form {
		if len(v) > 1 && k != "resource" {
			return nil, errInvalidRequest("the " + k + " parameter is repeated")
		}
	}
	return form, nil
}

const formType = "application/x-www-form-urlencoded"

// maxFastForm is the most parameters parseForm reads itself; a token
// request has at most eight.
const maxFastForm = 16

// parseForm is url.ParseQuery, the same values and an error where it has
// one, with the values of all the parameters in one allocation rather
// than one each. A form of more parameters than maxFastForm goes to
// url.ParseQuery itself (which also applies Go's limit on their number).
func parseForm(body string) (url.Values, error) {
	n := strings.Count(body, "&") + 1
	if n > maxFastForm {
		return url.ParseQuery(body)
	}
	form := make(url.Values)
	vals := make([]string, n)
	next := 0
	var err error
	for q := body; q != ""; {
		var pair string
		pair, q, _ = strings.Cut(q, "&")
		if strings.Contains(pair, ";") {
			err = errSemicolon
			continue
		}
		if pair == "" {
			continue
		}
		key, value, _ := strings.Cut(pair, "=")
		key, err1 := url.QueryUnescape(key)
		if err1 == nil {
			value, err1 = url.QueryUnescape(value)
		}
		if err1 != nil {
			if err == nil {
				err = err1
			}
			continue
		}
		if have, ok := form[key]; ok {
			form[key] = append(have, value)
			continue
		}
		// Each key's slice has its own capacity: appending to one
		// cannot write over the next.
		vals[next] = value
		form[key] = vals[next : next+1 : next+1]
		next++
	}
	return form, err
}

var errSemicolon = errors.New("invalid semicolon separator in query")

// authenticateClient applies the client's registered method: none for
// public clients, client_secret_post for confidential ones. A failure is
// an audit event, logged.
func (s *Server) authenticateClient(r *http.Request, form url.Values) (*store.Client, *oauthError) {
	c, e := s.checkClient(r, form)
	if e != nil && e.Code == "invalid_client" {
		s.logOnly(r.Context(), store.AuditEvent{Type: eventClientAuthFailed, ClientID: clip(form.Get("client_id")),
			Actor: store.ActorClient, Outcome: e.Description})
	}
	return c, e
}

func (s *Server) checkClient(r *http.Request, form url.Values) (*store.Client, *oauthError) {
	if _, _, ok := r.BasicAuth(); ok {
		e := errInvalidClient("client_secret_basic is not supported; send client_id and client_secret in the body")
		e.Challenge = `Basic realm="token", charset="UTF-8"`
		return nil, e
	}
	id := form.Get("client_id")
	if id == "" {
		return nil, errInvalidClient("client_id is required")
	}
	c, err := s.client(r.Context(), id)
	var me *metadataError
	switch {
	case errors.Is(err, errUnknownClient), errors.As(err, &me):
		return nil, errInvalidClient("unknown client").because(ReasonUnknownClient, "")
	case err != nil:
		// invalid_client would make the client register again, or give
		// up, over a client that still exists.
		return nil, s.unavailable("client authentication", err)
	}
	secret := form.Get("client_secret")
	if c.Public() {
		if secret != "" {
			return nil, errInvalidClient("this client is public (auth method none) and must not send a secret")
		}
		return c, nil
	}
	if secret == "" {
		return nil, errInvalidClient("this client must authenticate with client_secret_post")
	}
	if !secretMatches(secret, c.SecretHash) {
		return nil, errInvalidClient("client authentication failed")
	}
	return c, nil
}

func readAllLimited(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}
