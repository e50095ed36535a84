package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/store"
)

// dumpTimeout bounds Import and Export, which move a whole site in one
// transaction: an operator's command, not a request, so it may take its
// time.
const dumpTimeout = 10 * time.Minute

// errNotEmpty: Import only fills a site that holds nothing, so that a
// mistaken second run cannot mix two sites' states.
var errNotEmpty = errors.New("the site already holds keys, clients, authorizations or tokens; import only into a new site")

// Import stores d, the whole state of a site moving from another store,
// in one transaction: all of it or nothing. It refuses a site that holds
// any key, client, consent, code, grant or token already. Private keys are
// sealed with the site's key secret.
func (s *Site) Import(ctx context.Context, d *store.Dump) error {
	return s.txFor(ctx, "importing a site", dumpTimeout, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.lock(ctx, tx, "import"); err != nil {
			return err
		}
		if err := s.mustBeEmpty(ctx, tx); err != nil {
			return err
		}
		if err := s.importSmall(ctx, tx, d); err != nil {
			return err
		}
		if err := s.importMany(ctx, tx, d); err != nil {
			return err
		}
		return s.announce(ctx, tx, store.ChangeAll)
	})
}

func (s *Site) mustBeEmpty(ctx context.Context, tx pgx.Tx) error {
	var used bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM keys WHERE site_id = $1)
		OR EXISTS (SELECT 1 FROM clients WHERE site_id = $1) OR EXISTS (SELECT 1 FROM consents WHERE site_id = $1)
		OR EXISTS (SELECT 1 FROM codes WHERE site_id = $1) OR EXISTS (SELECT 1 FROM grants WHERE site_id = $1)
		OR EXISTS (SELECT 1 FROM tokens WHERE site_id = $1)`, s.id).Scan(&used)
	if err == nil && used {
		err = fmt.Errorf("site %s: %w", s.issuer, errNotEmpty)
	}
	return err
}

// importSmall stores the records a site has a few of.
func (s *Site) importSmall(ctx context.Context, tx pgx.Tx, d *store.Dump) error {
	for _, k := range d.Keys {
		if err := s.putKey(ctx, tx, k); err != nil {
			return err
		}
	}
	for _, c := range d.Clients {
		if _, err := s.putClient(ctx, tx, c, true); err != nil {
			return err
		}
	}
	for key, v := range d.Settings {
		if err := s.putSetting(ctx, tx, key, v); err != nil {
			return err
		}
	}
	if d.Catalog == nil {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO catalog (site_id, feed, sha256, updated_at) VALUES ($1, $2, sha256($2), now())
		ON CONFLICT (site_id) DO UPDATE SET feed = EXCLUDED.feed, sha256 = EXCLUDED.sha256, updated_at = now()`,
		s.id, d.Catalog)
	return err
}

// importMany stores the records a site may have thousands of, in one
// batch: one round trip instead of one per row.
func (s *Site) importMany(ctx context.Context, tx pgx.Tx, d *store.Dump) error {
	for _, c := range d.Consents {
		if err := s.putConsent(ctx, tx, c.ClientID, c.Subject, c.Consent); err != nil {
			return err
		}
	}
	b := &pgx.Batch{}
	for _, c := range d.Codes {
		if err := s.queueCode(b, c.Hash, c.Code); err != nil {
			return err
		}
	}
	for _, g := range d.Grants {
		if err := s.queueGrant(b, g); err != nil {
			return err
		}
	}
	if err := s.queueTokens(b, d.Tokens); err != nil {
		return err
	}
	return tx.SendBatch(ctx, b).Close()
}

// Export returns the whole state of the site, read in one snapshot, as
// Import takes it: for moving a site to another database or store.
func (s *Site) Export(ctx context.Context) (*store.Dump, error) {
	var d *store.Dump
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err := s.txFor(ctx, "exporting a site", dumpTimeout, opts, func(ctx context.Context, tx pgx.Tx) (err error) {
		d = &store.Dump{Settings: map[string][]byte{}}
		for _, read := range []func(context.Context, pgx.Tx, *store.Dump) error{
			s.exportKeys, s.exportClients, s.exportConsents, s.exportCodes,
			s.exportGrants, s.exportTokens, s.exportSettings, s.exportCatalog,
		} {
			if err := read(ctx, tx, d); err != nil {
				return err
			}
		}
		return nil
	})
	return d, err
}

func (s *Site) exportKeys(ctx context.Context, tx pgx.Tx, d *store.Dump) (err error) {
	d.Keys, err = s.loadKeys(ctx, tx)
	return err
}

func (s *Site) exportClients(ctx context.Context, tx pgx.Tx, d *store.Dump) error {
	return eachRow(ctx, tx, `SELECT data FROM clients WHERE site_id = $1 ORDER BY id`, s.id, func(row pgx.Rows) error {
		var data []byte
		if err := row.Scan(&data); err != nil {
			return err
		}
		c, err := decodeClient(data)
		d.Clients = append(d.Clients, c)
		return err
	})
}

func (s *Site) exportConsents(ctx context.Context, tx pgx.Tx, d *store.Dump) error {
	return eachRow(ctx, tx, `SELECT client_id, subject, data FROM consents WHERE site_id = $1 ORDER BY client_id, subject`, s.id, func(row pgx.Rows) error {
		var c store.DumpConsent
		var data []byte
		if err := row.Scan(&c.ClientID, &c.Subject, &data); err != nil {
			return err
		}
		c.Consent = new(store.Consent)
		d.Consents = append(d.Consents, c)
		return json.Unmarshal(data, c.Consent)
	})
}

func (s *Site) exportCodes(ctx context.Context, tx pgx.Tx, d *store.Dump) error {
	return eachRow(ctx, tx, `SELECT hash, data, used_at IS NOT NULL, coalesce(grant_id, '') FROM codes WHERE site_id = $1 ORDER BY hash`, s.id, func(row pgx.Rows) error {
		var c store.DumpCode
		var data []byte
		var used bool
		var grantID string
		if err := row.Scan(&c.Hash, &data, &used, &grantID); err != nil {
			return err
		}
		c.Code = new(store.Code)
		if err := json.Unmarshal(data, c.Code); err != nil {
			return err
		}
		c.Code.Used, c.Code.GrantID = used, grantID
		d.Codes = append(d.Codes, c)
		return nil
	})
}

func (s *Site) exportGrants(ctx context.Context, tx pgx.Tx, d *store.Dump) error {
	return eachRow(ctx, tx, `SELECT data, revoked_at IS NOT NULL, refreshed_at FROM grants WHERE site_id = $1 ORDER BY id`, s.id, func(row pgx.Rows) error {
		var data []byte
		var revoked bool
		var refreshed *time.Time
		if err := row.Scan(&data, &revoked, &refreshed); err != nil {
			return err
		}
		g, err := decodeGrant(data, revoked, refreshed)
		d.Grants = append(d.Grants, g)
		return err
	})
}

func (s *Site) exportTokens(ctx context.Context, tx pgx.Tx, d *store.Dump) error {
	return eachRow(ctx, tx, `SELECT hash, data, revoked_at IS NOT NULL, rotated_at FROM tokens WHERE site_id = $1 ORDER BY hash`, s.id, func(row pgx.Rows) error {
		var it store.IssuedToken
		var data []byte
		var revoked bool
		var rotated *time.Time
		if err := row.Scan(&it.Hash, &data, &revoked, &rotated); err != nil {
			return err
		}
		var err error
		it.Token, err = decodeToken(data, revoked, rotated)
		d.Tokens = append(d.Tokens, it)
		return err
	})
}

func (s *Site) exportSettings(ctx context.Context, tx pgx.Tx, d *store.Dump) error {
	return eachRow(ctx, tx, `SELECT key, value FROM settings WHERE site_id = $1`, s.id, func(row pgx.Rows) error {
		var key string
		var v []byte
		err := row.Scan(&key, &v)
		d.Settings[key] = nonNil(v)
		return err
	})
}

func (s *Site) exportCatalog(ctx context.Context, tx pgx.Tx, d *store.Dump) error {
	err := tx.QueryRow(ctx, `SELECT feed FROM catalog WHERE site_id = $1`, s.id).Scan(&d.Catalog)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	d.Catalog = nonNil(d.Catalog)
	return err
}

// eachRow runs fn on every row that sql, given the site's id, returns.
func eachRow(ctx context.Context, q querier, sql string, siteID int64, fn func(pgx.Rows) error) error {
	rows, err := q.Query(ctx, sql, siteID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
