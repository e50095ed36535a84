package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migrations are numbered SQL files, 001_init.sql and on, applied in
// order, each in a transaction of its own that records it in
// schoolgate_migrations. They only add (tables, columns, indexes) and
// never rename or drop: during a rolling upgrade the instances still
// running the previous build keep working against the newer schema.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the advisory lock every migration transaction takes,
// so instances starting together apply each migration once, in turn.
const migrationLock int64 = 0x7363686f6f6c6d67 // "schoolmg"

type migration struct {
	version int
	name    string // the file's name without .sql, reported to the operator
	sql     string
}

// migrations returns the embedded migrations, which must be numbered 1
// to N without gaps: a version stands for every migration up to it.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var all []migration
	for i, path := range names { // fs.Glob sorts, and the numbers are zero-padded
		name := strings.TrimSuffix(strings.TrimPrefix(path, "migrations/"), ".sql")
		num, _, _ := strings.Cut(name, "_")
		if v, err := strconv.Atoi(num); err != nil || v != i+1 {
			return nil, fmt.Errorf("pgstore: migration %s is out of sequence: want number %03d", path, i+1)
		}
		sql, err := migrationFiles.ReadFile(path)
		if err != nil {
			return nil, err
		}
		all = append(all, migration{version: i + 1, name: name, sql: string(sql)})
	}
	return all, nil
}

// migrate applies the migrations the database lacks and returns their
// names.
func migrate(ctx context.Context, db *pgxpool.Pool) ([]string, error) {
	all, err := migrations()
	if err != nil {
		return nil, err
	}
	var applied []string
	for {
		name, err := migrateStep(ctx, db, all)
		if err != nil || name == "" {
			return applied, err
		}
		applied = append(applied, name)
	}
}

// migrateStep applies the first migration the database lacks, if any, and
// returns its name. The version is read under the lock, so an instance
// that waited for another's migration finds it applied.
func migrateStep(ctx context.Context, db *pgxpool.Pool, all []migration) (applied string, err error) {
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schoolgate_migrations (
			version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schoolgate_migrations`).Scan(&have); err != nil {
			return err
		}
		if have > len(all) {
			return fmt.Errorf("database schema version %d is newer than this build supports (%d): upgrade the gateway", have, len(all))
		}
		if have == len(all) {
			return nil
		}
		m := all[have]
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("applying migration %s: %w", m.name, err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO schoolgate_migrations (version) VALUES ($1)`, m.version)
		applied = m.name
		return err
	})
	if err != nil {
		return "", fmt.Errorf("pgstore: migrating the database: %w", scrub(err))
	}
	return applied, nil
}
