package caddymodule

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/pgstore"
)

// One registry may be written two ways: a directory through a symbolic
// link or with a trailing slash, a database by DSNs whose parameters come
// in another order or with other credentials. Two handlers of a config
// naming one registry share one platform, as if they wrote it alike;
// named two ways and taken for two, each would serve every school of it,
// from its own copy of the records. So a registry is known by its key,
// which is the same however it is written wherever that can be told
// without reaching it.

// key names the registry in one spelling: "dir " and the directory's
// absolute path with its symbolic links resolved as far as it exists
// (the rest is made at start), or "postgres " and pgstore.DatabaseOf the
// DSN, which holds no password. A DSN whose placeholders cannot be
// replaced now is known by its text's digest. The config's platforms are
// ranked by key (App.platforms), which decides which serves an issuer
// that two have a record of (platformclaim.go).
func (r PlatformRegistry) key() string {
	if pg := r.Postgres; pg != nil {
		if db := pg.database(); db != "" {
			return "postgres " + db
		}
		sum := sha256.Sum256([]byte(pg.DSN))
		return "postgres dsn " + hex.EncodeToString(sum[:])
	}
	return "dir " + canonicalDir(r.Dir)
}

// name names the registry in a message that must tell two apart:
// describe's words, with the database for postgres (describe's
// "postgres" is what the admin API selects a platform by).
func (r PlatformRegistry) name() string {
	if r.Postgres != nil {
		if db := r.Postgres.database(); db != "" {
			return "postgres " + db
		}
	}
	return r.describe()
}

// database is pgstore.DatabaseOf the DSN with its placeholders replaced,
// "" if they cannot be or it does not parse.
func (pg *PostgresStore) database() string {
	dsn := caddy.NewReplacer().ReplaceKnown(pg.DSN, "")
	if dsn == "" {
		return ""
	}
	db, err := pgstore.DatabaseOf(dsn)
	if err != nil {
		return ""
	}
	return db
}

// canonicalDir is dir's absolute path with the symbolic links of its
// longest existing part resolved.
func canonicalDir(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.Clean(dir)
	}
	rest := ""
	for p := abs; ; {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		} else if !errors.Is(err, os.ErrNotExist) {
			return abs
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// sameSettings refuses a second handler naming the registry of p with
// other settings: its schools are one platform, which has one of each.
// Both spellings are named when they differ.
func (p *platform) sameSettings(h *Platform) error {
	named := p.cfg.describe()
	if other := h.Registry.describe(); other != named {
		named += " (also written " + other + ")"
	}
	if p.max != h.MaxActive {
		return fmt.Errorf("max_active: registry %s is named by two school_platform handlers with max_active %d and %d; "+
			"its schools are one platform, give it one", named, p.max, h.MaxActive)
	}
	if a, b := p.cfg.Postgres, h.Registry.Postgres; a != nil && b != nil && a.secret() != b.secret() {
		db := a.database()
		if db == "" {
			db = "of one DSN"
		}
		return fmt.Errorf("registry postgres: the database %s is named by two school_platform handlers with two key_secret "+
			"values; its schools are one platform, whose keys are sealed with one secret: give it one", db)
	}
	return nil
}

// secret is the key secret with its placeholders replaced, or as written
// if they cannot be.
func (pg *PostgresStore) secret() string {
	if s := caddy.NewReplacer().ReplaceKnown(pg.KeySecret, ""); s != "" {
		return s
	}
	return pg.KeySecret
}
