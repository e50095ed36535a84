package caddymodule

import (
	"errors"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/schoolgate/schoolgate/school"
)

// ServeHTTP hands the request to the school (package school), with the
// reverse proxy to the legacy server as the next handler; a school that
// failed to load answers through its stand-in (failure.go). A request
// that arrives before the App's Start built the school waits for it, as
// long as the request lasts (start.go).
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	st := g.run.Await(r.Context())
	if st == nil {
		return school.WriteStarting(w)
	}
	s := st.site
	if s == nil {
		if s = st.failed.built(); s == nil {
			return st.failed.serve(w, r, next)
		}
	}
	return handlerError(s.Serve(w, r, next))
}

// handlerError makes the school's refusals Caddy's: its error handling
// answers them with their status.
func handlerError(err error) error {
	var se *school.StatusError
	if err != nil && errors.As(err, &se) {
		return caddyhttp.Error(se.Status, se.Err)
	}
	return err
}

// identityPlaceholders mirror the identity headers, in the order of
// school.IdentityHeaders, for operators' own header_up.
var identityPlaceholders = []string{
	"http.auth.user.id",
	"http.auth.user.email",
	"http.auth.user.name",
	"http.auth.user.org_id",
	"http.auth.user.roles",
	"http.auth.user.scopes",
	"http.auth.user.client_id",
	"http.auth.user.audience",
}

// setPlaceholders is the school's Identified: one provider that answers
// the placeholders from the identity when asked, instead of eight map
// insertions per request that nothing may read; a value is worked out
// only for a placeholder used.
func setPlaceholders(r *http.Request, id school.Identity) {
	repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if !ok {
		return
	}
	repl.Map(func(key string) (any, bool) {
		for i, p := range identityPlaceholders {
			if p == key {
				return id.Value(i), true
			}
		}
		return nil, false
	})
}
