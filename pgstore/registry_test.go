package pgstore

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/registry/registrytest"
)

// openRegistry opens the school registry of dsn on a pool of its own.
func openRegistry(t *testing.T, dsn string, validate registry.Validator) *Registry {
	t.Helper()
	r, err := OpenRegistry(testContext(t), connect(t, dsn), validate)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRegistryConformance: a fresh database per subtest.
func TestRegistryConformance(t *testing.T) {
	registrytest.Run(t, func(t *testing.T, validate registry.Validator) registry.Registry {
		return openRegistry(t, pgcluster.Database(t), validate)
	})
}

// TestRegistryShared: two instances, each with a pool of its own, on one
// database.
func TestRegistryShared(t *testing.T) {
	registrytest.RunShared(t, func(t *testing.T) (registry.Registry, registry.Registry) {
		dsn := pgcluster.Database(t)
		return openRegistry(t, dsn, nil), openRegistry(t, dsn, nil)
	})
}

// schoolChanges collects what a registry watcher is told.
type schoolChanges chan registry.Change

func watchSchools(t *testing.T, r *Registry) schoolChanges {
	c := make(schoolChanges, 1024)
	t.Cleanup(r.Watch(func(ch registry.Change) { c <- ch }))
	return c
}

// await waits for a change of issuer ("" for read everything), skipping
// others, for at most limit.
func (c schoolChanges) await(t *testing.T, issuer string, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case got := <-c:
			if got.Issuer == issuer {
				return
			}
		case <-deadline:
			t.Fatalf("no change of %q within %v", issuer, limit)
		}
	}
}

func school(issuer string, hosts ...string) registry.Record {
	return registry.Record{Issuer: issuer, Hosts: hosts, Config: json.RawMessage(`{"upstream":"http://127.0.0.1:9080"}`)}
}

// TestRegistryReconnect: a listener whose connection is killed listens
// again and tells the registry's watchers to read everything; writes are
// then announced again.
func TestRegistryReconnect(t *testing.T) {
	dsn := pgcluster.Database(t)
	a, b := openRegistry(t, dsn, nil), openRegistry(t, dsn, nil)
	seen := watchSchools(t, b)
	seen.await(t, "", 5*time.Second) // the listener's first connection
	ctx := testContext(t)
	if _, err := a.pool.db.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	seen.await(t, "", 5*time.Second)
	if _, err := a.Put(ctx, school("https://school.example")); err != nil {
		t.Fatal(err)
	}
	seen.await(t, "https://school.example", time.Second)
}

// TestRegistryPolls: a write whose notification was lost is found by the
// version check, as read everything.
func TestRegistryPolls(t *testing.T) {
	defer func(d time.Duration) { pollEvery = d }(pollEvery)
	pollEvery = 100 * time.Millisecond
	dsn := pgcluster.Database(t)
	b := openRegistry(t, dsn, nil)
	seen := watchSchools(t, b)
	seen.await(t, "", 5*time.Second)
	// The poll must have read the version once (a first read only
	// learns it); waiting for that instead of sleeping keeps the test
	// true on a loaded machine.
	h := b.pool.hub
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(pollEvery / 4) {
		h.mu.Lock()
		known := h.schools.known
		h.mu.Unlock()
		if known {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the poll never read the registry's version")
		}
	}
	for len(seen) > 0 {
		<-seen
	}
	// A version bump as a notification lost on the way would leave it.
	exec(t, dsn, `UPDATE schools_version SET version = version + 1`)
	seen.await(t, "", 2*time.Second)
}

// TestRegistryRefusalAnnouncesNothing: a write refused for a host rolls
// back with the announcement: the registry's version, which each
// announcement bumps, is unchanged.
func TestRegistryRefusalAnnouncesNothing(t *testing.T) {
	dsn := pgcluster.Database(t)
	r := openRegistry(t, dsn, nil)
	ctx := testContext(t)
	if _, err := r.Put(ctx, school("https://a.example", "www.a.example")); err != nil {
		t.Fatal(err)
	}
	before := count(t, dsn, `SELECT version FROM schools_version`)
	if _, err := r.Put(ctx, school("https://b.example", "www.a.example")); !errors.Is(err, registry.ErrHostTaken) {
		t.Fatalf("Put = %v", err)
	}
	if after := count(t, dsn, `SELECT version FROM schools_version`); after != before {
		t.Errorf("a refused Put moved the registry's version from %d to %d", before, after)
	}
	if n := count(t, dsn, `SELECT count(*) FROM schools WHERE issuer = 'https://b.example'`); n != 0 {
		t.Errorf("a refused Put left %d rows", n)
	}
}

// TestRegistryHostUniqueInDatabase: a host another transaction holds,
// uncommitted, makes a Put wait; once that commits, the Put is refused
// naming the owner it committed, read in the Put's own transaction.
func TestRegistryHostUniqueInDatabase(t *testing.T) {
	dsn := pgcluster.Database(t)
	r := openRegistry(t, dsn, nil)
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO schools (issuer, config, version, updated_at) VALUES ('https://a.example', '{}', 1, now());
		INSERT INTO school_hosts (host, issuer) VALUES ('a.example', 'https://a.example'), ('www.shared.example', 'https://a.example')`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Put(ctx, school("https://b.example", "www.shared.example"))
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for count(t, dsn, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the Put never waited on the uncommitted host")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err = <-done
	var taken *registry.HostTakenError
	if !errors.As(err, &taken) || taken.Host != "www.shared.example" || taken.Owner != "https://a.example" {
		t.Errorf("Put = %v; want www.shared.example refused as https://a.example's", err)
	}
}

// TestRegistryConfigAsWritten: the configuration is read back byte for
// byte, spacing and key order included, so every instance compares the
// same bytes.
func TestRegistryConfigAsWritten(t *testing.T) {
	r := openRegistry(t, pgcluster.Database(t), nil)
	ctx := testContext(t)
	config := json.RawMessage("{ \"upstream\":\"http://127.0.0.1:9080\",\n  \"b\": 1, \"a\": [ 2 ] }")
	stored, err := r.Put(ctx, registry.Record{Issuer: "https://school.example", Config: config})
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Get(ctx, "https://school.example")
	if err != nil || string(got.Config) != string(config) || string(stored.Config) != string(config) {
		t.Errorf("Put gave %s, Get %s (%v); want %s", stored.Config, got.Config, err, config)
	}
}
