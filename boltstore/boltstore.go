// Package boltstore is the embedded store.Store: one bbolt file per site,
// held by one process. Open opens a site's file; Export reads a stopped
// site's file whole, for a move to another store.
package boltstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

// schemaVersion is the layout of the bbolt file. Adding a bucket needs no
// bump: every bucket of the list is created on open. Bump it only when the
// meaning of stored data changes, and add the migration to migrate.
//
// Version 2 indexes live grants by subject and client (boltgrants.go). A
// build of version 1 would store grants without indexing them, so it is
// refused the file, which keeps the indexes whole.
//
// Version 3 groups each index's keys by the other owner (a person's grants
// by client, a client's by person) and drops the per-client counts, which
// are read from the client index instead. A build of version 2 would write
// keys of the old layout, so it is refused the file; the migration indexes
// every live grant anew.
//
// Version 4 writes tokens and grants in a binary form (records.go). A
// build of version 3 would fail to read them, so it is refused the file;
// this build reads the JSON records of earlier ones, so nothing is
// rewritten.
//
// Version 5 nests the buckets written off the request path under one
// (boltlayout.go). A build of version 4 would make them anew at the top
// level, empty, so it is refused the file; the migration moves them in
// the transaction that writes the version.
//
// Version 6 writes authorization codes in a binary form too (records.go).
// A build of version 5 would fail to read them, so it is refused the file;
// this build reads the JSON codes of earlier ones, so nothing is
// rewritten.
const schemaVersion = 6

var (
	bucketMeta     = []byte("meta")
	bucketKeys     = []byte("keys")
	bucketClients  = []byte("clients")
	bucketPending  = []byte("pending")
	bucketConsents = []byte("consents")
	bucketCodes    = []byte("codes")
	bucketGrants   = []byte("grants")
	bucketTokens   = []byte("tokens")
	bucketSettings = []byte("settings")
	bucketCatalog  = []byte("catalog")

	keySchemaVersion = []byte("schema_version")
)

// boltStore is the embedded Store: one bbolt file per site.
type boltStore struct {
	db *bolt.DB
	// group queues the hot-path writes (see write in boltcommit.go).
	group groupCommit
	// fresh is a new file whose buckets are not written yet: its first
	// commit writes them with what it stores (see commit).
	fresh atomic.Bool
	// first serializes the calls that find the file fresh; aside is the
	// file made beside its path until that commit, which hands it to
	// placing (newfile.go); noSync is whether bbolt syncs once it is in
	// place.
	first  sync.Mutex
	aside  *aside
	noSync bool
	// placing is the putting in place, in the background, of the file
	// made aside, its first commit made: every later commit, and Close,
	// waits for it. Nil when no file is being put in place.
	placing atomic.Pointer[placement]
}

// update runs fn in a read-write transaction, unless ctx has ended: bbolt
// takes no context, so a cancelled caller is refused before it acts. The
// transaction stores the audit events recorded on ctx (boltaudit.go).
func (s *boltStore) update(ctx context.Context, fn func(*bolt.Tx) error) error {
	return s.updateAudit(ctx, func(tx *bolt.Tx, _ *store.AuditTx) error { return fn(tx) })
}

// commit runs fn in a read-write transaction and commits it. On a fresh
// file the schema is written in the same transaction, so that a new
// school's first start (its first key and settings) is one commit.
func (s *boltStore) commit(fn func(*bolt.Tx) error) error {
	return s.commitIn(fn, true)
}

// commitIn is commit. With placed false, a fresh file's first commit
// returns once made, before the file made aside is in its place: only a
// new site's first start (InitSite) asks it (newfile.go says why that is
// safe). Every other commit returns once the file is in place.
func (s *boltStore) commitIn(fn func(*bolt.Tx) error, placed bool) error {
	if !s.fresh.Load() {
		if err := s.waitPlaced(); err != nil {
			return err
		}
		return s.db.Update(fn)
	}
	if err := s.commitFirst(fn); err != nil || !placed {
		return err
	}
	return s.waitPlaced()
}

// waitPlaced waits for the file made aside to be in its place, if it is
// being put there.
func (s *boltStore) waitPlaced() error {
	if p := s.placing.Load(); p != nil {
		return p.wait()
	}
	return nil
}

// commitFirst is a fresh file's first commit: the schema and fn's
// changes. A file made aside is then put in its place in the background
// (newfile.go), and every later commit waits for it (and is then synced
// by bbolt as always); the writes that find the file fresh meanwhile
// wait for the first commit.
func (s *boltStore) commitFirst(fn func(*bolt.Tx) error) error {
	s.first.Lock()
	defer s.first.Unlock()
	if !s.fresh.Load() {
		return s.commit(fn)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := writeSchema(tx); err != nil {
			return err
		}
		return fn(tx)
	})
	if err != nil {
		return err
	}
	if s.aside != nil {
		s.placeLater(s.aside)
		s.aside = nil
	}
	s.fresh.Store(false)
	return nil
}

// view runs fn in a read-only transaction, unless ctx has ended. A fresh
// file's reads see its empty buckets in a write transaction that is rolled
// back: nothing is written, and no read finds a bucket missing.
func (s *boltStore) view(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !s.fresh.Load() {
		return s.db.View(fn)
	}
	tx, err := s.db.Begin(true)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := writeSchema(tx); err != nil {
		return err
	}
	return fn(tx)
}

// ErrLocked is a store file another process holds.
var ErrLocked = errors.New("the file is locked by another process")

// Open opens (creating if needed) the store file at path. The timeout
// bounds the wait for the file lock, which another process or a config
// that was not cleaned up may hold. A new file is made beside path and
// has its name from its first commit on (newfile.go).
func Open(path string, timeout time.Duration) (store.Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	dropStaleNewName(path)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		s, err := openNew(path, timeout)
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("opening %s: %w", path, ErrLocked)
		}
		if err != nil {
			return nil, fmt.Errorf("creating %s: %w", path, err)
		}
		if s != nil {
			return s, nil
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("opening %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	s := &boltStore{db: db}
	if s.empty() {
		s.fresh.Store(true)
		return s, nil
	}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// current reports whether the file has every bucket and the schema this
// build writes, and its top level in one page (healRoot), so that opening
// it needs no write transaction (and no fsync): a thousand schools start
// with a thousand reads. (Tx.Page is read before any writer can run.)
func (s *boltStore) current() bool {
	ok := false
	_ = s.db.View(func(tx *bolt.Tx) error {
		if !hasLayout(tx) || !rootOnePage(tx) {
			return nil
		}
		var have int
		v := tx.Bucket(bucketMeta).Get(keySchemaVersion)
		ok = v != nil && json.Unmarshal(v, &have) == nil && have == schemaVersion
		return nil
	})
	return ok
}

// empty reports whether the file has no bucket at all: bbolt has just
// created it.
func (s *boltStore) empty() bool {
	empty := false
	_ = s.db.View(func(tx *bolt.Tx) error {
		k, _ := tx.Cursor().First()
		empty = k == nil
		return nil
	})
	return empty
}

func (s *boltStore) migrate() error {
	if s.current() {
		return nil
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := writeSchema(tx); err != nil {
			return err
		}
		return healRoot(tx)
	})
}

// writeSchema creates the buckets this build uses and brings the data to
// its schema version.
func writeSchema(tx *bolt.Tx) error {
	if err := writeLayout(tx); err != nil {
		return err
	}
	// Keys in bucketAuditNew go on from the sequence of those kept in
	// bucketAudit before it existed.
	if n, a := tx.Bucket(bucketAuditNew), tx.Bucket(bucketAudit); n.Sequence() < a.Sequence() {
		if err := n.SetSequence(a.Sequence()); err != nil {
			return err
		}
	}
	meta := tx.Bucket(bucketMeta)
	have := 0
	if v := meta.Get(keySchemaVersion); v != nil {
		if err := json.Unmarshal(v, &have); err != nil {
			return fmt.Errorf("reading schema version: %w", err)
		}
		if have > schemaVersion {
			return fmt.Errorf("store schema version %d is newer than this build supports (%d)", have, schemaVersion)
		}
	}
	if have < 3 {
		if err := rebuildGrantIndexes(tx); err != nil {
			return fmt.Errorf("indexing the grants: %w", err)
		}
	}
	v, _ := json.Marshal(schemaVersion)
	return meta.Put(keySchemaVersion, v)
}

// SaveCatalog keeps the last good catalog feed.
func (s *boltStore) SaveCatalog(ctx context.Context, raw []byte) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		return rare(tx, bucketCatalog).Put([]byte("feed"), raw)
	})
}

// LoadCatalog returns the last good catalog feed, or nil.
func (s *boltStore) LoadCatalog(ctx context.Context) ([]byte, error) {
	var out []byte
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if v := rare(tx, bucketCatalog).Get([]byte("feed")); v != nil {
			out = append([]byte(nil), v...)
		}
		return nil
	})
	return out, err
}

// Close closes the file. A file made aside and never committed is
// removed: no store file was made; one committed is in place first (Close
// waits for its placing).
func (s *boltStore) Close() error {
	if p := s.placing.Load(); p != nil {
		_ = p.wait() // the file keeps its first commit, or never had its name
	}
	s.first.Lock()
	defer s.first.Unlock()
	if s.aside != nil {
		_ = os.Remove(s.aside.f.Name())
	}
	return s.db.Close()
}

func getJSON(b *bolt.Bucket, key string, v any) error {
	raw := b.Get([]byte(key))
	if raw == nil {
		return store.ErrNotFound
	}
	return json.Unmarshal(raw, v)
}

func putJSON(b *bolt.Bucket, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put([]byte(key), raw)
}

// Backup writes a consistent copy of the whole file while the store
// serves: one read transaction sees a single moment, and writers go on.
func (s *boltStore) Backup(ctx context.Context, w io.Writer) error {
	if s.fresh.Load() {
		// A copy of a file without its buckets would not open as a store.
		if err := s.update(ctx, func(*bolt.Tx) error { return nil }); err != nil {
			return err
		}
	}
	return s.view(ctx, func(tx *bolt.Tx) error {
		_, err := tx.WriteTo(w)
		return err
	})
}
