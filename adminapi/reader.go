package adminapi

import (
	"context"
	"net/http"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/school"
	"github.com/schoolgate/schoolgate/store"
)

// Reader is a school's store as an operation that only reads it sees
// it: a running school's, or the store alone of a platform's school that
// is not built, which a read must not build (building one lets go of
// another in use past max_active). Its reads answer as the school's
// authorization server's (authserver.Reads).
type Reader interface {
	Audit(ctx context.Context, q store.AuditQuery) (store.AuditPage, error)
	// ExportSubject is store.ErrNotFound when nothing is kept of the
	// person.
	ExportSubject(ctx context.Context, subject string) (*store.SubjectData, error)
	ListClients(ctx context.Context) ([]authserver.ClientInfo, error)
	ConnectedApps(ctx context.Context) ([]authserver.ConnectedApp, error)
	ListGrants(ctx context.Context, f authserver.GrantFilter) (authserver.GrantPage, error)
	MCPConnectionsEnabled(ctx context.Context) (bool, error)
	// WriteUnavailable logs a failed read of what and answers 503.
	WriteUnavailable(w http.ResponseWriter, what string, err error) error
}

// reader finds the school with the issuer for a read: by Read when the
// adapter gives it, else as a running school (Find).
func (a API) reader(ctx context.Context, w http.ResponseWriter, issuer string) (Reader, func(), error) {
	if a.Read != nil {
		return a.Read(ctx, w, issuer)
	}
	s, release, err := a.Find(w, issuer)
	if err != nil {
		return nil, nil, err
	}
	return SiteReader{s}, release, nil
}

// SiteReader is a running school's Reader.
type SiteReader struct{ *school.Site }

// ListClients is the school's authorization server's.
func (s SiteReader) ListClients(ctx context.Context) ([]authserver.ClientInfo, error) {
	return s.Auth().ListClients(ctx)
}

// ConnectedApps is the school's authorization server's.
func (s SiteReader) ConnectedApps(ctx context.Context) ([]authserver.ConnectedApp, error) {
	return s.Auth().ConnectedApps(ctx)
}

// ListGrants is the school's authorization server's.
func (s SiteReader) ListGrants(ctx context.Context, f authserver.GrantFilter) (authserver.GrantPage, error) {
	return s.Auth().ListGrants(ctx, f)
}

// MCPConnectionsEnabled is the school's authorization server's.
func (s SiteReader) MCPConnectionsEnabled(ctx context.Context) (bool, error) {
	return s.Auth().MCPConnectionsEnabled(ctx)
}

// Audit is the school's authorization server's.
func (s SiteReader) Audit(ctx context.Context, q store.AuditQuery) (store.AuditPage, error) {
	return s.Auth().Audit(ctx, q)
}

// ExportSubject is the school's authorization server's.
func (s SiteReader) ExportSubject(ctx context.Context, subject string) (*store.SubjectData, error) {
	return s.Auth().ExportSubject(ctx, subject)
}
