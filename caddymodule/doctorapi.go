package caddymodule

import (
	"context"
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/adminapi"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/school"
)

func init() {
	caddy.RegisterModule(doctorAPI{})
}

// doctorAPI adds the connection doctor to Caddy's admin API
// (docs/operator.md, "Why can't this application connect?"):
//
//	GET /schoolgate/doctor?issuer=...&client_id=...(&lang=)
//	    the steps of the application's recent attempts, each with its
//	    outcome and, for a refused one, why (in lang, English by default)
type doctorAPI struct{}

// CaddyModule returns the Caddy module information.
func (doctorAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.schoolgate_doctor",
		New: func() caddy.Module { return new(doctorAPI) },
	}
}

// Routes returns the admin routes.
func (doctorAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/schoolgate/doctor", Handler: caddy.AdminHandlerFunc(handleDoctor)}}
}

var _ caddy.AdminRouter = doctorAPI{}

func handleDoctor(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("use GET")}
	}
	clientID, lang, err := adminapi.ParseDoctorQuery(r.URL.Query())
	if err != nil {
		return badRequest(err.Error())
	}
	issuer := r.URL.Query().Get("issuer")
	if issuer == "" {
		return badRequest("name the school: issuer=<the school's origin>")
	}
	origin, err := policy.ParseOrigin(issuer)
	if err != nil {
		return badRequest(fmt.Sprintf("issuer: %v", err))
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeCallTimeout)
	defer cancel()
	// A platform's idle school is read from its store, not built
	// (storedread.go).
	s, e, release, err := schoolToRead(w, origin)
	if err != nil {
		return err
	}
	defer release()
	if s != nil {
		rep, err := s.Auth().Doctor(ctx, clientID, lang)
		if err != nil {
			return s.WriteUnavailable(w, "reading the connection doctor's steps", err)
		}
		return writeAdminJSON(w, http.StatusOK, rep)
	}
	g, err := e.placed("connection doctor's record")
	if err != nil {
		return err
	}
	rep, err := g.storedDoctor(ctx, clientID, lang)
	if err != nil {
		e.p.ctx.Slogger().Error("store failed: reading the connection doctor's steps", "issuer", origin, "error", err)
		return school.WriteTemporarilyUnavailable(w, policy.RetryAfterUnavailable,
			"reading the connection doctor's steps failed: the school's store did not answer; try again shortly")
	}
	return writeAdminJSON(w, http.StatusOK, rep)
}
