package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// The instances that use a database are counted through the database
// itself: each writes a row of its own (gateway_instances, migration
// 007) every beat, with the database's clock, and the rows written within
// the last liveBeats beats are the live instances. The count is kept in
// memory and read with a load; the writes run in the background, never
// on a request's path. A school's budget is divided by it, so that the
// instances serving a school admit its budget together.

const (
	// beatEvery is how often an instance writes its row and counts.
	beatEvery = 2 * time.Second
	// liveBeats: an instance whose row is older than this many beats is
	// gone (stopped without a goodbye, or cut off from the database).
	liveBeats = 3
	// forgetAfter is when a gone instance's row is deleted.
	forgetAfter = time.Minute
)

// instances is a pool's count of the live instances.
type instances struct {
	pool  *Pool
	id    string
	count atomic.Int32
	stop  context.CancelFunc
	done  chan struct{}
}

// Instances returns how many gateway instances use the pool's database
// now, this one included, counting from the first call on and until the
// pool closes; one until the first count is in.
func (p *Pool) Instances() func() int {
	p.instOnce.Do(func() {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		ctx, cancel := context.WithCancel(context.Background())
		in := &instances{pool: p, id: hex.EncodeToString(b), stop: cancel, done: make(chan struct{})}
		in.count.Store(1)
		p.inst = in
		go in.run(ctx)
	})
	in := p.inst
	return func() int { return int(in.count.Load()) }
}

// run writes and counts every beat until ctx ends, then deletes the row.
func (in *instances) run(ctx context.Context) {
	defer close(in.done)
	t := time.NewTicker(beatEvery)
	defer t.Stop()
	for {
		in.beat(ctx)
		select {
		case <-ctx.Done():
			gone, cancel := context.WithTimeout(context.Background(), callTimeout)
			_, _ = in.pool.db.Exec(gone, `DELETE FROM gateway_instances WHERE id = $1`, in.id)
			cancel()
			return
		case <-t.C:
		}
	}
}

// beat writes the instance's row, forgets long-gone instances and
// counts the live ones, in one round trip. A failed beat keeps the last
// count: the database is away, and the instances with it.
func (in *instances) beat(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	live := (liveBeats * beatEvery).Seconds()
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO gateway_instances (id, seen) VALUES ($1, now())
		ON CONFLICT (id) DO UPDATE SET seen = now()`, in.id)
	b.Queue(`DELETE FROM gateway_instances WHERE seen < now() - make_interval(secs => $1)`, forgetAfter.Seconds())
	var n int32
	b.Queue(`SELECT count(*) FROM gateway_instances WHERE seen > now() - make_interval(secs => $1)`, live).
		QueryRow(func(row pgx.Row) error { return row.Scan(&n) })
	if err := in.pool.db.SendBatch(ctx, b).Close(); err != nil || n < 1 {
		return
	}
	in.count.Store(n)
}

// close stops counting and deletes the instance's row.
func (in *instances) close() {
	in.stop()
	<-in.done
}
