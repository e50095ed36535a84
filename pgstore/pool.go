// Package pgstore is the PostgreSQL store.Store: every gateway
// instance of a site connects to one database and behaves as one
// instance would, and one database holds any number of sites.
//
// Decisions that depend on stored rows (redeeming a code, rotating a
// refresh token, registering a client) are taken in one READ COMMITTED
// transaction on the rows it has locked, with the rules of
// store/rfc9700.go. Changes that instances cache are announced with
// NOTIFY in the transaction that makes them (see notify.go).
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// connectWindow is how long Connect waits for an unreachable database: a
// gateway and its database started together (a compose file, a host
// reboot) come up in either order. A variable so tests can shorten it.
var connectWindow = 15 * time.Second

// Pool is one database, shared by every site of the process that names
// the same DSN.
type Pool struct {
	db  *pgxpool.Pool
	hub *hub // delivers other instances' changes (listen.go)
	// inst counts the instances using the database, once asked
	// (instances.go).
	instOnce sync.Once
	inst     *instances
	// local: the database runs on this machine (charge.go).
	local bool
}

// Connect opens a pool on dsn, waits for the database to be reachable
// (up to connectWindow) and brings its schema up to date.
func Connect(ctx context.Context, dsn string) (*Pool, error) {
	p, _, err := open(ctx, dsn, 0)
	return p, err
}

// Migrate brings the schema of the database at dsn up to date, for the
// migrate-db command, and returns the names of the migrations it applied.
func Migrate(ctx context.Context, dsn string) (applied []string, err error) {
	p, applied, err := open(ctx, dsn, 2)
	if err != nil {
		return nil, err
	}
	p.Close()
	return applied, nil
}

// open connects and migrates; maxConns > 0 overrides the pool size.
func open(ctx context.Context, dsn string, maxConns int32) (*Pool, []string, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, nil, err
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("pgstore: opening a pool on %s: %w", hostOf(cfg), scrub(err))
	}
	if err := waitReachable(ctx, db, hostOf(cfg)); err != nil {
		db.Close()
		return nil, nil, err
	}
	applied, err := migrate(ctx, db)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return &Pool{db: db, hub: newHub(db), local: isLocal(cfg)}, applied, nil
}

// Close closes the pool's connections. The Caddy adapter calls it once no
// site uses the pool; calling it again does nothing.
func (p *Pool) Close() {
	p.instOnce.Do(func() {}) // no count starts from now on
	if p.inst != nil {
		p.inst.close()
	}
	p.hub.close()
	p.db.Close()
}

// waitReachable pings until the database answers, backing off up to a
// second between tries, for connectWindow at most. A server that answers
// with a refusal (a wrong password, no such database) fails at once:
// waiting would not change its mind.
func waitReachable(ctx context.Context, db *pgxpool.Pool, host string) error {
	start := time.Now()
	deadline := start.Add(connectWindow)
	pause := 50 * time.Millisecond
	for {
		pctx, cancel := context.WithDeadline(ctx, deadline)
		err := db.Ping(pctx)
		cancel()
		if err == nil {
			return nil
		}
		if refused(err) || ctx.Err() != nil || time.Now().Add(pause).After(deadline) {
			return fmt.Errorf("pgstore: cannot reach the database at %s (tried for %v): %w",
				host, time.Since(start).Round(100*time.Millisecond), scrub(err))
		}
		if !sleep(ctx, pause) {
			return ctx.Err()
		}
		pause = min(2*pause, time.Second)
	}
}

// refused reports an answer from the server itself, other than "starting
// up" or "too many connections", which pass.
func refused(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "57P03", "53300": // cannot_connect_now, too_many_connections
		return false
	}
	return true
}

// hostOf names the server for messages: its address or socket directory,
// never the rest of the DSN.
func hostOf(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	if len(c.Host) > 0 && c.Host[0] == '/' {
		return "socket " + c.Host
	}
	return net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
}
