package adminapi

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/schoolgate/schoolgate/dataroot"
	"github.com/schoolgate/schoolgate/school"
	"github.com/schoolgate/schoolgate/store"
)

// BackupResult is one school's copy.
type BackupResult struct {
	Issuer string `json:"issuer"`
	File   string `json:"file"`
	Bytes  int64  `json:"bytes"`
}

// BackupSkip is a school that backup --all did not copy, and why.
type BackupSkip struct {
	Issuer string `json:"issuer"`
	Reason string `json:"reason"`
}

// Backup answers POST /schoolgate/backup: the store of one school
// ({"issuer", "file"}) or of every school ({"all": true, "dir"}: the
// adapter's BackupAll, "skipped" naming the schools it did not copy)
// copied while they serve. A school kept in PostgreSQL is refused: the
// database has its own backups.
func (a API) Backup(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Issuer string `json:"issuer"`
		File   string `json:"file"`
		All    bool   `json:"all"`
		Dir    string `json:"dir"`
	}
	if err := DecodePost(r, &body); err != nil {
		return err
	}
	var out []BackupResult
	var skipped []BackupSkip
	switch {
	case body.All:
		if body.Dir == "" {
			return BadRequest(`name the directory: "dir": "<where the copies go>"`)
		}
		var err error
		if out, skipped, err = a.BackupAll(r.Context(), body.Dir); err != nil {
			return err
		}
	default:
		if body.File == "" {
			return BadRequest(`name the file: "file": "<where the copy goes>"`)
		}
		s, release, err := a.Find(w, body.Issuer)
		if err != nil {
			return err
		}
		defer release()
		res, err := BackupSchool(r.Context(), s, body.File)
		if err != nil {
			return err
		}
		out = append(out, res)
	}
	answer := map[string]any{"backups": out}
	if skipped != nil {
		answer["skipped"] = skipped
	}
	return school.WriteJSON(w, http.StatusOK, answer)
}

// BackupName is a school's file in a backup directory: its host and port.
func BackupName(issuer string) string { return dataroot.Name(issuer) + ".db" }

// BackupSchool writes the school's copy next to file and renames it
// there, so that file is never half written.
func BackupSchool(ctx context.Context, s *school.Site, file string) (BackupResult, error) {
	return backupStore(ctx, s.Issuer(), s.Store(), file)
}

func backupStore(ctx context.Context, issuer string, st store.Store, file string) (BackupResult, error) {
	b, ok := st.(store.Backuper)
	if !ok {
		return BackupResult{}, Error{Status: http.StatusConflict,
			Err: fmt.Errorf("%s is kept in PostgreSQL: back up the database (pg_dump) and keep the key_secret apart", issuer)}
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".schoolgate-backup-*")
	if err != nil {
		return BackupResult{}, Error{Status: http.StatusBadRequest, Err: err}
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
		return BackupResult{}, fmt.Errorf("backing up %s: %v", issuer, err)
	}
	st2, err := os.Stat(file)
	if err != nil {
		return BackupResult{}, err
	}
	return BackupResult{Issuer: issuer, File: file, Bytes: st2.Size()}, nil
}
