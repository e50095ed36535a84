package adminapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/school"
	"github.com/schoolgate/schoolgate/store"
)

// StoredSource is what the reads of a school's store alone use of it: a
// bbolt file's store, a database's rows of the school
// (pgstore.SiteRows), or NoRows.
type StoredSource interface {
	authserver.DoctorSource
	authserver.ReadSource
	QueryAudit(ctx context.Context, q store.AuditQuery) (store.AuditPage, error)
	ExportSubject(ctx context.Context, subject string) (*store.SubjectData, error)
}

// NoRows is the store of a school that never had one.
type NoRows struct{}

func (NoRows) QuerySteps(context.Context, store.StepQuery) ([]store.Step, error) { return nil, nil }

func (NoRows) GetClient(context.Context, string) (*store.Client, error) {
	return nil, store.ErrNotFound
}

func (NoRows) QueryAudit(context.Context, store.AuditQuery) (store.AuditPage, error) {
	return store.AuditPage{}, nil
}

func (NoRows) ExportSubject(context.Context, string) (*store.SubjectData, error) {
	return nil, store.ErrNotFound
}

func (NoRows) ListClients(context.Context) ([]*store.Client, error) { return nil, nil }

func (NoRows) ListGrants(context.Context, store.GrantQuery) ([]*store.Grant, error) { return nil, nil }

func (NoRows) GrantCounts(context.Context) (map[string]store.GrantCount, error) {
	return map[string]store.GrantCount{}, nil
}

func (NoRows) GetSetting(context.Context, string) ([]byte, error) { return nil, store.ErrNotFound }

// NewStoredReader is the Reader of issuer's store opened to read alone
// (a platform's school that is not built), as the connection doctor reads
// it: no school is built for a read.
func NewStoredReader(issuer string, src StoredSource, vendors []authserver.VendorClient, log *slog.Logger) Reader {
	return &storedReader{src: src, reads: authserver.ReadsOf(src, vendors), issuer: issuer, log: log}
}

// StoredReaderFailed is the Reader of a store that could not be opened:
// every read fails with err (a 503).
func StoredReaderFailed(issuer string, err error, log *slog.Logger) Reader {
	return &storedReader{err: err, issuer: issuer, log: log}
}

// storedReader is the Reader of a school's store alone; err is the
// store's opening's failure, which every read returns.
type storedReader struct {
	src    StoredSource
	reads  authserver.Reads
	err    error
	issuer string
	log    *slog.Logger
}

func (r *storedReader) Audit(ctx context.Context, q store.AuditQuery) (store.AuditPage, error) {
	if r.err != nil {
		return store.AuditPage{}, r.err
	}
	return r.src.QueryAudit(ctx, q)
}

// ExportSubject refuses what authserver's refuses: no person has an
// empty or overlong sub.
func (r *storedReader) ExportSubject(ctx context.Context, subject string) (*store.SubjectData, error) {
	if r.err != nil {
		return nil, r.err
	}
	if subject == "" || len(subject) > authserver.MaxClientIDLen {
		return nil, store.ErrNotFound
	}
	return r.src.ExportSubject(ctx, subject)
}

func (r *storedReader) ListClients(ctx context.Context) ([]authserver.ClientInfo, error) {
	if r.err != nil {
		return nil, r.err
	}
	return r.reads.ListClients(ctx)
}

func (r *storedReader) ConnectedApps(ctx context.Context) ([]authserver.ConnectedApp, error) {
	if r.err != nil {
		return nil, r.err
	}
	return r.reads.ConnectedApps(ctx)
}

func (r *storedReader) ListGrants(ctx context.Context, f authserver.GrantFilter) (authserver.GrantPage, error) {
	if r.err != nil {
		return authserver.GrantPage{}, r.err
	}
	return r.reads.ListGrants(ctx, f)
}

func (r *storedReader) MCPConnectionsEnabled(ctx context.Context) (bool, error) {
	if r.err != nil {
		return false, r.err
	}
	return r.reads.MCPConnectionsEnabled(ctx)
}

func (r *storedReader) WriteUnavailable(w http.ResponseWriter, what string, err error) error {
	r.log.Error("store failed: "+what, "issuer", r.issuer, "error", err)
	return school.WriteTemporarilyUnavailable(w, policy.RetryAfterUnavailable,
		what+" failed: the school's store did not answer; try again shortly")
}
