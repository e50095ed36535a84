package caddymodule

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/adminapi"
)

// backupAll copies the store of every school into dir (package
// adminapi's Backup, with all): the site blocks' and those of the
// platforms of a registry dir.
func backupAll(ctx context.Context, dir string) ([]adminapi.BackupResult, []adminapi.BackupSkip, error) {
	sites, err := allSites()
	if err != nil {
		return nil, nil, err
	}
	var out []adminapi.BackupResult
	for _, s := range sites {
		res, err := adminapi.BackupSchool(ctx, s.Site, filepath.Join(dir, adminapi.BackupName(s.Issuer())))
		if err != nil {
			return nil, nil, err
		}
		out = append(out, res)
	}
	more, skipped, err := backupPlatforms(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	return append(out, more...), skipped, nil
}

func badRequest(msg string) error {
	return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("%s", msg)}
}

// allSites is every running school.
func allSites() ([]*site, error) {
	app, err := runningApp()
	if err != nil {
		return nil, err
	}
	app.mu.Lock()
	defer app.mu.Unlock()
	out := make([]*site, 0, len(app.sites))
	for _, s := range app.sites {
		out = append(out, s)
	}
	return out, nil
}
