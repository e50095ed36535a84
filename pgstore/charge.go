package pgstore

import (
	"context"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/schoolgate/schoolgate/store"
)

// What a call costs whom. A request gives its share of the instance back
// while it waits on the database (store.Waiter). When the database runs
// on the same machine, its processes work for the request on the
// instance's own processors meanwhile: measured under a flood of code
// exchanges with PostgreSQL beside the gateway, they spent more than the
// gateway did, and charged to nobody that left the flooding school's
// neighbours a small part of the machine. So on a local database each
// call is charged to its request (store.Waiter.Charge) for the time it
// took there (a transaction from its begin to its commit; a single
// statement whole): the database's work for it is within that time, and
// its school's fair share counts it. A database on another machine
// spends none of ours, and nothing is charged.

// maxCharge bounds what one call is charged: the database's work for a
// call of the gateway is about a millisecond of CPU at most (a code
// exchange's, measured beside the peers); a longer call waited (for a row
// lock, a sync, the processors), which is no work of its.
const maxCharge = 2 * time.Millisecond

// isLocal reports whether the pool's server is on this machine: a Unix
// socket or a loopback address.
func isLocal(cfg *pgxpool.Config) bool {
	host := cfg.ConnConfig.Host
	if host == "" || host[0] == '/' || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// charge charges the request of ctx for the time since began, when the
// database is local. It is called while the request's share is paused
// (retryCall), before it is taken back.
func (p *Pool) charge(ctx context.Context, began time.Time) {
	if !p.local {
		return
	}
	if w := store.WaiterOf(ctx); w != nil {
		w.Charge(min(time.Since(began), maxCharge))
	}
}
