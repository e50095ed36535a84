package caddymodule

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"
	"github.com/schoolgate/schoolgate/store"
)

// backupResult is one school's copy.
type backupResult struct {
	Issuer string `json:"issuer"`
	File   string `json:"file"`
	Bytes  int64  `json:"bytes"`
}

// handleBackup copies the store of one school ({"issuer", "file"}) or of
// every school ({"all": true, "dir"}: the site blocks' and those of the
// platforms of a registry dir, "skipped" naming the disabled and failed
// ones) while they serve. A school kept in PostgreSQL is refused: the
// database has its own backups.
func handleBackup(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Issuer string `json:"issuer"`
		File   string `json:"file"`
		All    bool   `json:"all"`
		Dir    string `json:"dir"`
	}
	if err := decodeAdminPost(r, &body); err != nil {
		return err
	}
	var out []backupResult
	var skipped []backupSkip
	switch {
	case body.All:
		if body.Dir == "" {
			return badRequest(`name the directory: "dir": "<where the copies go>"`)
		}
		sites, err := allSites()
		if err != nil {
			return err
		}
		for _, s := range sites {
			res, err := backupSite(r.Context(), s, filepath.Join(body.Dir, backupName(s.Issuer())))
			if err != nil {
				return err
			}
			out = append(out, res)
		}
		more, skip, err := backupPlatforms(r.Context(), body.Dir)
		if err != nil {
			return err
		}
		out, skipped = append(out, more...), skip
	default:
		if body.File == "" {
			return badRequest(`name the file: "file": "<where the copy goes>"`)
		}
		s, release, err := siteOf(w, body.Issuer)
		if err != nil {
			return err
		}
		defer release()
		res, err := backupSite(r.Context(), s, body.File)
		if err != nil {
			return err
		}
		out = append(out, res)
	}
	answer := map[string]any{"backups": out}
	if skipped != nil {
		answer["skipped"] = skipped
	}
	return writeAdminJSON(w, http.StatusOK, answer)
}

func badRequest(msg string) error {
	return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("%s", msg)}
}

// backupName is a school's file in a backup directory: its host and port.
func backupName(issuer string) string { return hostFileName(issuer) + ".db" }

// backupSite writes the school's copy next to file and renames it there,
// so that file is never half written.
func backupSite(ctx context.Context, s *site, file string) (backupResult, error) {
	b, ok := s.stored.Store.(store.Backuper)
	if !ok {
		return backupResult{}, caddy.APIError{HTTPStatus: http.StatusConflict,
			Err: fmt.Errorf("%s is kept in PostgreSQL: back up the database (pg_dump) and keep the key_secret apart", s.Issuer())}
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".schoolgate-backup-*")
	if err != nil {
		return backupResult{}, caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: err}
	}
	defer os.Remove(tmp.Name())
	err = b.Backup(ctx, tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		return backupResult{}, fmt.Errorf("backing up %s: %v", s.Issuer(), err)
	}
	st, err := os.Stat(file)
	if err != nil {
		return backupResult{}, err
	}
	return backupResult{Issuer: s.Issuer(), File: file, Bytes: st.Size()}, nil
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
