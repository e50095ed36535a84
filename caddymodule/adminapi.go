package caddymodule

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/adminapi"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/school"
)

func init() {
	caddy.RegisterModule(adminAPI{})
}

// adminAPI adds operator endpoints to Caddy's admin API (which is local
// and origin-checked by Caddy):
//
//	GET  /schoolgate/running          the running schools, their keys and catalog; a platform's every school (old name: /schoolgate/sites)
//	GET  /schoolgate/health           200 when every site block's school's store reads and a key signs and every platform's registry reads, else 503; ?issuer= one school
//	POST /schoolgate/keys/rotate      {"issuer": "..."}: publish a new signing key
//	POST /schoolgate/catalog/refresh  {"issuer": "..."}: import the catalog feed now
//	POST /schoolgate/backup           {"issuer", "file"} or {"all": true, "dir"}: copy the stores while they serve
//
// and the operations of the operator's admin area (package adminapi).
type adminAPI struct{}

// CaddyModule returns the Caddy module information.
func (adminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.schoolgate",
		New: func() caddy.Module { return new(adminAPI) },
	}
}

// Routes returns the admin routes.
func (adminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/schoolgate/running", Handler: caddy.AdminHandlerFunc(audited(handleRunning))},
		{Pattern: "/schoolgate/sites", Handler: caddy.AdminHandlerFunc(audited(handleRunning))}, // running's old name
		{Pattern: "/schoolgate/health", Handler: caddy.AdminHandlerFunc(audited(handleHealth))},
		{Pattern: "/schoolgate/keys/rotate", Handler: caddy.AdminHandlerFunc(audited(handleRotate))},
		{Pattern: "/schoolgate/catalog/refresh", Handler: caddy.AdminHandlerFunc(audited(handleCatalogRefresh))},
		{Pattern: "/schoolgate/mcp-connections", Handler: caddy.AdminHandlerFunc(audited(handleMCPConnections))},
		{Pattern: "/schoolgate/clients", Handler: caddy.AdminHandlerFunc(audited(handleClients))},
		{Pattern: "/schoolgate/clients/delete", Handler: caddy.AdminHandlerFunc(audited(handleClientDelete))},
		{Pattern: "/schoolgate/clients/review", Handler: caddy.AdminHandlerFunc(audited(handleClientReview))},
		{Pattern: "/schoolgate/backup", Handler: caddy.AdminHandlerFunc(audited(handleBackup))},
		{Pattern: "/schoolgate/schools", Handler: caddy.AdminHandlerFunc(audited(handleSchools))},
		{Pattern: "/schoolgate/schools/remove", Handler: caddy.AdminHandlerFunc(audited(handleSchoolRemove))},
	}
}

// activeApp is the schoolgate app of the config being served now; tests,
// which run no Caddy, replace it.
var activeApp = func() (any, error) { return caddy.ActiveContext().AppIfConfigured(appName) }

// runningApp finds the schoolgate app of the config being served now.
func runningApp() (*App, error) {
	app, err := activeApp()
	if err != nil {
		return nil, caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("no school is configured")}
	}
	return app.(*App), nil
}

// siteStatus is a running school as /schoolgate/running lists it.
type siteStatus = adminapi.SchoolStatus

// runningSites answers a GET with the running schools, sorted by issuer.
func runningSites(r *http.Request) ([]*site, error) {
	if r.Method != http.MethodGet {
		return nil, caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("use GET")}
	}
	app, err := runningApp()
	if err != nil {
		return nil, err
	}
	app.mu.Lock()
	sites := make([]*site, 0, len(app.sites))
	for _, s := range app.sites {
		sites = append(sites, s)
	}
	app.mu.Unlock()
	sort.Slice(sites, func(i, j int) bool { return sites[i].Issuer() < sites[j].Issuer() })
	return sites, nil
}

// handleRunning answers /schoolgate/running (and its old name,
// /schoolgate/sites): every school this Caddy runs now.
func handleRunning(w http.ResponseWriter, r *http.Request) error {
	sites, err := runningSites(r)
	if err != nil {
		return err
	}
	out := make([]siteStatus, 0, len(sites))
	for _, s := range sites {
		out = append(out, s.status(r.Context()))
	}
	for _, f := range failedSites() {
		next := f.nextTry()
		out = append(out, siteStatus{Issuer: f.issuer, State: "failed", Reason: f.failure.Load().Error(),
			Data: f.gateway.Data, CatalogFrom: f.gateway.Catalog, Since: f.since, KeyIDs: []string{}, NextTry: &next})
	}
	for _, p := range runningPlatforms() {
		out = append(out, p.statuses(r.Context())...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Issuer < out[j].Issuer })
	return writeAdminJSON(w, http.StatusOK, out)
}

// status describes one running school, reading its store for the grant
// count only (the index of live grants by client, no grant itself) and
// loading nothing lazy.
func (s *site) status(ctx context.Context) siteStatus {
	keys := s.Auth().Keys()
	st := siteStatus{Issuer: s.Issuer(), State: s.State(), Data: s.stored.where, KeyIDs: keys.KIDs(),
		CanSign: keys.CanSign(time.Now()), CatalogFrom: s.gateway.Catalog, Since: s.Since(),
		CatalogRefreshed: s.CatalogRefreshed(), Courses: s.Courses()}
	if fi, err := os.Stat(s.stored.where); err == nil {
		st.StoreBytes = fi.Size()
	}
	ctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	if counts, err := s.stored.GrantCounts(ctx); err == nil {
		n := 0
		for _, c := range counts {
			n += c.Grants
		}
		st.LiveGrants = &n
	}
	return st
}

// failedSites are the running config's schools that failed to load.
func failedSites() []*failedSite {
	app, err := runningApp()
	if err != nil {
		return nil
	}
	return app.Failed()
}

// handleHealth reports each site block's school (its store, signing keys
// and catalog) and each platform's registry and counts (platformstatus.go);
// with ?issuer=, the one school's check, a platform's too. A load
// balancer or monitor reads the status code.
func handleHealth(w http.ResponseWriter, r *http.Request) error {
	sites, err := runningSites(r)
	if err != nil {
		return err
	}
	if issuer := r.URL.Query().Get("issuer"); issuer != "" {
		return healthOf(w, r, issuer)
	}
	out := make([]school.Health, 0, len(sites))
	status := http.StatusOK
	for _, s := range sites {
		h := s.Health(r.Context())
		if !h.Healthy {
			status = http.StatusServiceUnavailable
		}
		out = append(out, h)
	}
	for _, f := range failedSites() {
		status = http.StatusServiceUnavailable
		out = append(out, school.Health{Issuer: f.issuer, Store: "failed to load: " + f.failure.Load().Error(),
			Keys: "not loaded", Catalog: "not loaded"})
	}
	var platforms []platformSummary
	for _, p := range runningPlatforms() {
		hs, sum, healthy := p.health()
		out = append(out, hs...)
		platforms = append(platforms, sum)
		if !healthy {
			status = http.StatusServiceUnavailable
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Issuer < out[j].Issuer })
	answer := map[string]any{"healthy": status == http.StatusOK, "sites": out}
	if platforms != nil {
		answer["platforms"] = platforms
	}
	return writeAdminJSON(w, status, answer)
}

// healthOf checks one school, found as the other operations on one school
// find it (siteOf): a platform's idle school is built for its check.
func healthOf(w http.ResponseWriter, r *http.Request, issuer string) error {
	s, release, err := siteOf(w, issuer)
	if err != nil {
		return err
	}
	defer release()
	h := s.Health(r.Context())
	status := http.StatusOK
	if !h.Healthy {
		status = http.StatusServiceUnavailable
	}
	return writeAdminJSON(w, status, map[string]any{"healthy": h.Healthy, "sites": []school.Health{h}})
}

// siteOf finds the running school with the issuer, however the operator
// spells it: the App and the platforms know each school by its issuer's
// one spelling. A site block's school is found first, then a platform's
// (by its issuer, not its aliases), built if idle and held until the
// caller calls release, so that the platform does not let go of it in the
// middle of the operation. A school that failed to load is a 503 with
// Retry-After (set on w), a platform's disabled school a 409.
func siteOf(w http.ResponseWriter, issuer string) (s *site, release func(), err error) {
	origin, err := adminOrigin(issuer)
	if err != nil {
		return nil, nil, err
	}
	app, err := runningApp()
	if err != nil {
		return nil, nil, err
	}
	if s, ok := app.Site(origin); ok {
		return s, func() {}, nil
	}
	if f := app.failedSite(origin); f != nil {
		return nil, nil, unavailableSchool(w.Header(), f)
	}
	var unread *platform
	for _, p := range app.platformsNow() {
		a, found, err := p.hold(w.Header(), origin)
		switch {
		case err != nil:
			return nil, nil, err
		case found:
			return a.Built().site, a.Release, nil
		case p.tables.Load() == nil:
			unread = p
		}
	}
	if unread != nil {
		return nil, nil, unread.unreadRegistry(w, origin)
	}
	return nil, nil, caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("no school with issuer %s", origin)}
}

// adminOrigin is the issuer an admin operation names, in its one
// spelling; a 400 when it names none.
func adminOrigin(issuer string) (string, error) {
	if issuer == "" {
		return "", caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf(`name the school: "issuer": "<the school's origin>"`)}
	}
	origin, err := policy.ParseOrigin(issuer)
	if err != nil {
		return "", caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("issuer: %v", err)}
	}
	return origin, nil
}

// writeAdminJSON answers an admin API request with v as JSON.
func writeAdminJSON(w http.ResponseWriter, status int, v any) error {
	return school.WriteJSON(w, status, v)
}

var _ caddy.AdminRouter = adminAPI{}
