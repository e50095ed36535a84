package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/store"
)

// SiteRows reads a site's rows without opening it (Pool.Site): no key
// secret, no keys loaded, and no sites row made for a school never
// started, which has nothing to read. It is how an operator's look at a
// platform's school that is not built reads its store without building
// it. It writes nothing.
type SiteRows struct {
	// s is the site with its id alone; nil when the database has no row
	// of the issuer.
	s *Site
}

// SiteRows returns the reader of the rows of the school with this issuer
// (in its one spelling).
func (p *Pool) SiteRows(ctx context.Context, issuer string) (*SiteRows, error) {
	r := &SiteRows{}
	err := retry(ctx, "finding site "+issuer, callTimeout, func(ctx context.Context) error {
		var id int64
		err := p.db.QueryRow(ctx, `SELECT id FROM sites WHERE issuer = $1`, issuer).Scan(&id)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			r.s = nil
			return nil
		case err != nil:
			return err
		}
		r.s = &Site{pool: p, id: id, issuer: issuer}
		return nil
	})
	return r, err
}

// QuerySteps is Site.QuerySteps; none for a site without a row.
func (r *SiteRows) QuerySteps(ctx context.Context, q store.StepQuery) ([]store.Step, error) {
	if r.s == nil {
		return nil, ctx.Err()
	}
	return r.s.QuerySteps(ctx, q)
}

// GetClient is Site.GetClient; store.ErrNotFound for a site without a
// row.
func (r *SiteRows) GetClient(ctx context.Context, id string) (*store.Client, error) {
	if r.s == nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, store.ErrNotFound
	}
	return r.s.GetClient(ctx, id)
}

// QueryAudit is Site.QueryAudit; no events for a site without a row.
func (r *SiteRows) QueryAudit(ctx context.Context, q store.AuditQuery) (store.AuditPage, error) {
	if r.s == nil {
		return store.AuditPage{}, ctx.Err()
	}
	return r.s.QueryAudit(ctx, q)
}

// ExportSubject is Site.ExportSubject; store.ErrNotFound for a site
// without a row.
func (r *SiteRows) ExportSubject(ctx context.Context, subject string) (*store.SubjectData, error) {
	if r.s == nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, store.ErrNotFound
	}
	return r.s.ExportSubject(ctx, subject)
}

// ListClients is Site.ListClients; none for a site without a row.
func (r *SiteRows) ListClients(ctx context.Context) ([]*store.Client, error) {
	if r.s == nil {
		return nil, ctx.Err()
	}
	return r.s.ListClients(ctx)
}

// ListGrants is Site.ListGrants; none for a site without a row.
func (r *SiteRows) ListGrants(ctx context.Context, q store.GrantQuery) ([]*store.Grant, error) {
	if r.s == nil {
		return nil, ctx.Err()
	}
	return r.s.ListGrants(ctx, q)
}

// GrantCounts is Site.GrantCounts; none for a site without a row.
func (r *SiteRows) GrantCounts(ctx context.Context) (map[string]store.GrantCount, error) {
	if r.s == nil {
		return map[string]store.GrantCount{}, ctx.Err()
	}
	return r.s.GrantCounts(ctx)
}

// GetSetting is Site.GetSetting; store.ErrNotFound for a site without a
// row.
func (r *SiteRows) GetSetting(ctx context.Context, key string) ([]byte, error) {
	if r.s == nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, store.ErrNotFound
	}
	return r.s.GetSetting(ctx, key)
}
