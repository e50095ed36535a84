package caddymodule

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/adminapi"
)

// The admin API's operations on one school (keys, catalog, clients,
// grants, backup) find a platform's school by its issuer, as they find a
// site block's. The school is let in as a request is: built if idle, and
// held until the operation ends, so that the platform does not let go of
// it (past max_active, or for a changed record) under the operation.

// hold finds the platform's school of issuer (in its one spelling) and
// lets an admin operation in, building the school if it is idle; the
// caller releases it. found is false for an issuer the platform has no
// record of. A disabled school is a 409, a failed one the 503 its
// requests get, with Retry-After set in header.
func (p *platform) hold(header http.Header, issuer string) (a *activeSchool, found bool, err error) {
	// A record replaced after the lookup retires its school: the table
	// that replaced the one looked in has the new one. A second
	// replacement in between is a registry written faster than it is
	// read; the operator tries again.
	for range 2 {
		t := p.tables.Load()
		if t == nil {
			return nil, false, nil
		}
		e := t.School(issuer)
		if e == nil {
			return nil, false, nil
		}
		if e.rec.Disabled {
			return nil, true, caddy.APIError{HTTPStatus: http.StatusConflict,
				Err: fmt.Errorf("%s is disabled in the registry (%s): enable it first", issuer, p.cfg.describe())}
		}
		a, f := e.Enter()
		if f != nil {
			return nil, true, unavailableSchool(header, f)
		}
		if a != nil {
			return a, true, nil
		}
	}
	header.Set("Retry-After", "1")
	return nil, true, caddy.APIError{HTTPStatus: http.StatusServiceUnavailable,
		Err: fmt.Errorf("%s is being changed in the registry; try again", issuer)}
}

// unavailableSchool is the 503 of a school that failed to load, with the
// reason for the operator and, in header, the Retry-After of its next
// rebuild.
func unavailableSchool(header http.Header, f *failedSite) error {
	header.Set("Retry-After", strconv.Itoa(f.retryAfter()))
	return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable,
		Err: fmt.Errorf("%s failed to load: %v; it is built again in the background, next at %s",
			f.issuer, f.failure.Load(), f.nextTry().Format(time.RFC3339))}
}

// unreadRegistry is the 503 of an issuer that no school has while a
// platform's registry has not been read: it may be there.
func (p *platform) unreadRegistry(w http.ResponseWriter, issuer string) error {
	retry := 1
	if f := p.watch.Failure(); f != nil {
		retry = f.RetryAfter()
	}
	w.Header().Set("Retry-After", strconv.Itoa(retry))
	return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable,
		Err: fmt.Errorf("no school with issuer %s is known now, and the registry (%s) is not read yet; try again shortly",
			issuer, p.cfg.describe())}
}

// backupPlatforms copies, into dir, the store of every school of the
// platforms whose registry is a directory (a postgres registry's schools
// are in its database, which has its own backups), one school at a time:
// an idle school is built for its copy and held during it only, so that
// max_active lets go of it as of any other. A disabled or failed school
// is skipped, and said so.
func backupPlatforms(ctx context.Context, dir string) ([]adminapi.BackupResult, []adminapi.BackupSkip, error) {
	var out []adminapi.BackupResult
	var skipped []adminapi.BackupSkip
	for _, p := range runningPlatforms() {
		if p.cfg.Dir == "" {
			continue
		}
		issuers := slices.Sorted(maps.Keys(p.schools()))
		for _, issuer := range issuers {
			a, found, err := p.hold(http.Header{}, issuer)
			switch {
			case !found:
				continue // removed meanwhile
			case err != nil:
				skipped = append(skipped, adminapi.BackupSkip{Issuer: issuer, Reason: err.Error()})
				continue
			}
			res, err := adminapi.BackupSchool(ctx, a.Built().site.Site, filepath.Join(dir, adminapi.BackupName(issuer)))
			a.Release()
			if err != nil {
				return nil, nil, err
			}
			out = append(out, res)
		}
	}
	return out, skipped, nil
}
