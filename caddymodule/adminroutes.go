package caddymodule

import (
	"errors"
	"net/http"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/adminapi"
	"github.com/schoolgate/schoolgate/school"
)

// The admin API's operations on one school are package adminapi's; here
// they are registered in Caddy's admin API, find their school as every
// admin route does (siteOf), and have their refusals answered as Caddy's.

// ops answers the admin routes that operate on one school.
var ops = adminapi.API{
	Find: func(w http.ResponseWriter, issuer string) (*school.Site, func(), error) {
		s, release, err := siteOf(w, issuer)
		if err != nil {
			return nil, nil, err
		}
		return s.Site, release, nil
	},
	Read:      readerOf,
	BackupAll: backupAll,
}

// The routes of package adminapi, as Caddy's admin handlers.
var (
	handleRotate         = adminRoute(ops.RotateKeys)
	handleMCPConnections = adminRoute(ops.MCPConnections)
	handleClients        = adminRoute(ops.Clients)
	handleClientDelete   = adminRoute(ops.ClientDelete)
	handleClientReview   = adminRoute(ops.ClientReview)
	handleGrants         = adminRoute(ops.Grants)
	handleGrantRevoke    = adminRoute(ops.GrantRevoke)
	handleAudit          = adminRoute(ops.Audit)
	handleSubjectExport  = adminRoute(ops.SubjectExport)
	handleSubjectErase   = adminRoute(ops.SubjectErase)
	handleBackup         = adminRoute(ops.Backup)
	handleCatalogRefresh = adminRoute(ops.CatalogRefresh)
)

// adminRoute makes a handler of package adminapi Caddy's.
func adminRoute(h func(http.ResponseWriter, *http.Request) error) caddy.AdminHandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error { return caddyError(h(w, r)) }
}

// caddyError answers an adminapi.Error as Caddy's admin API answers its
// own errors (caddy.APIError: the status, and {"error": ...}).
func caddyError(err error) error {
	var e adminapi.Error
	if errors.As(err, &e) {
		return caddy.APIError{HTTPStatus: e.Status, Err: e.Err}
	}
	return err
}

// onlyParams refuses a query naming a parameter an admin route does not
// take, or one given twice.
var onlyParams = adminapi.OnlyParams

func init() {
	caddy.RegisterModule(grantsAPI{})
}

// grantsAPI adds the connected applications of each school to Caddy's
// admin API (local and origin-checked by Caddy), as the admin area shows
// them:
//
//	GET  /schoolgate/grants?issuer=...                      every application people are connected to, with how many
//	                                                        people ("people") by how many live grants ("grants")
//	GET  /schoolgate/grants?issuer=...&client_id=...        the grants of one application, person by person, a page at a time
//	GET  /schoolgate/grants?issuer=...&subject=...          the grants of one person, application by application
//	     (&after=<next of the previous page>&limit=<1-499, default 50>)
//	POST /schoolgate/grants/revoke                          {"issuer", "grant_id", "subject"}: end one grant of a person, or
//	                                                        {"issuer", "client_id", "subject"}: end everything the application
//	                                                        holds for the person (every grant, every device)
type grantsAPI struct{}

// CaddyModule returns the Caddy module information.
func (grantsAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.schoolgate_grants",
		New: func() caddy.Module { return new(grantsAPI) },
	}
}

// Routes returns the admin routes.
func (grantsAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/schoolgate/grants", Handler: caddy.AdminHandlerFunc(audited(handleGrants))},
		{Pattern: "/schoolgate/grants/revoke", Handler: caddy.AdminHandlerFunc(audited(handleGrantRevoke))},
	}
}

var _ caddy.AdminRouter = grantsAPI{}

func init() {
	caddy.RegisterModule(auditAPI{})
}

// auditAPI adds each school's audit trail and a person's data to Caddy's
// admin API (docs/privacy.md):
//
//	GET  /schoolgate/audit?issuer=...(&subject=&client_id=&type=&since=&until=&limit=&cursor=)
//	     events newest first, a page at a time ("next" is the cursor of the next page)
//	GET  /schoolgate/subject?issuer=...&subject=...    everything stored about the person (404: nothing)
//	POST /schoolgate/subject/erase                      {"issuer", "subject"}: delete it all (404: nothing)
type auditAPI struct{}

// CaddyModule returns the Caddy module information.
func (auditAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.schoolgate_audit",
		New: func() caddy.Module { return new(auditAPI) },
	}
}

// Routes returns the admin routes.
func (auditAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/schoolgate/audit", Handler: caddy.AdminHandlerFunc(handleAudit)},
		{Pattern: "/schoolgate/subject", Handler: caddy.AdminHandlerFunc(handleSubjectExport)},
		{Pattern: "/schoolgate/subject/erase", Handler: caddy.AdminHandlerFunc(audited(handleSubjectErase))},
	}
}

var _ caddy.AdminRouter = auditAPI{}

// audited gives an admin request the audit context of the admin API: the
// events it records name it as the actor, from its caller's address.
func audited(h caddy.AdminHandlerFunc) caddy.AdminHandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		return h(w, r.WithContext(adminapi.WithAudit(r)))
	}
}
