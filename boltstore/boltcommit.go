package boltstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.opentelemetry.io/otel/trace"

	"github.com/schoolgate/schoolgate/store"
)

// Group commit for the hot paths (codes and tokens). Every bbolt commit
// writes the pages it touched and syncs the file twice, so what a token
// request costs is mostly its share of a commit. Writers that arrive
// while a commit is under way queue up, and the next commit takes all of
// them in one transaction: the busier the store, the more requests share
// a commit, and a lone writer commits at once. bbolt's own Batch closes
// a batch after a fixed delay instead, however long it then waits for the
// commit before it; under load that made batches of three to five.
//
// The writer whose call finds no commit under way leads: it commits
// what is pending, then hands the lead to the first call that queued
// meanwhile, so no caller waits for more than the commit before its own.

// groupCommit is the queue of one store's hot-path writes.
type groupCommit struct {
	mu sync.Mutex
	// pending are the calls waiting for the next commit; committing is
	// set while a leader commits or the lead is being handed over.
	pending    []*commitCall
	committing bool
}

// commitCall is one write waiting in the queue.
type commitCall struct {
	fn func(*bolt.Tx) error
	// done gets the call's outcome: nil, an error, or errTrySolo.
	done chan error
	// lead is closed when the call is to commit what is pending.
	lead chan struct{}
	// size is how many calls its commit held, and spent the processor
	// time the commit spent on the call (chargeBatch), set before done.
	size  int
	spent time.Duration
}

// errTrySolo tells a call that failed inside a shared transaction to run
// alone, so that its error is its own and the others commit without it.
var errTrySolo = errors.New("run the write in a transaction of its own")

// write runs fn in a durable read-write transaction, shared with the
// writes that queue with it. fn may run more than once (a shared
// transaction another call failed is rolled back and retried without
// it; a call that failed runs again alone), so it must reset whatever it
// records outside the transaction. Durability is never relaxed: write
// returns after the commit that holds fn's changes is synced.
func (s *boltStore) write(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if trace.SpanFromContext(ctx).SpanContext().IsValid() {
		return s.writeTraced(ctx, fn)
	}
	_, err := s.writeSized(ctx, fn)
	return err
}

// writeSized is write, returning how many calls the commit held.
func (s *boltStore) writeSized(ctx context.Context, fn func(*bolt.Tx) error) (int, error) {
	// The request waits for the commit's sync, not the processors; the
	// work the commit did for it is charged to it all the same.
	c := &commitCall{fn: fn, done: make(chan error, 1), lead: make(chan struct{})}
	if w := store.WaiterOf(ctx); w != nil {
		w.Pause()
		defer func() {
			w.Charge(c.spent)
			w.Resume()
		}()
	}
	g := &s.group
	g.mu.Lock()
	g.pending = append(g.pending, c)
	leads := !g.committing
	g.committing = true
	g.mu.Unlock()
	if !leads {
		select {
		case err := <-c.done:
			return c.size, s.solo(c, err)
		case <-c.lead:
		}
	}
	s.commitPending()
	err := <-c.done
	return c.size, s.solo(c, err)
}

// solo runs fn alone when its shared transaction failed because of it,
// adding the commit's work to what c is charged.
func (s *boltStore) solo(c *commitCall, err error) error {
	if errors.Is(err, errTrySolo) {
		var m chargeMeter
		err = s.commit(func(tx *bolt.Tx) error {
			m = startCharge()
			return c.fn(tx)
		})
		c.spent += time.Duration(m.used())
	}
	return err
}

// commitPending commits every pending call, then hands the lead to the
// first call that queued meanwhile, or ends the leading.
func (s *boltStore) commitPending() {
	g := &s.group
	g.mu.Lock()
	batch := g.pending
	g.pending = nil
	g.mu.Unlock()
	s.commitBatch(batch)
	g.mu.Lock()
	if len(g.pending) > 0 {
		close(g.pending[0].lead)
	} else {
		g.committing = false
	}
	g.mu.Unlock()
}

// commitBatch runs the calls in one transaction. A call whose fn fails
// (or panics) is taken out and told to run alone, and the others are
// tried again without it; a commit that fails fails them all.
func (s *boltStore) commitBatch(batch []*commitCall) {
	var m chargeMeter
	for len(batch) > 0 {
		failed := -1
		err := s.commit(func(tx *bolt.Tx) error {
			m = startCharge() // inside: the wait for bbolt's lock is no work
			fillAppended(tx)
			for i, c := range batch {
				t := time.Now()
				err := callSafely(c.fn, tx)
				c.spent += time.Since(t)
				if err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed >= 0 {
			batch[failed].done <- errTrySolo
			batch = slices.Delete(batch, failed, failed+1)
			continue
		}
		m.share(batch)
		for _, c := range batch {
			c.size = len(batch)
			c.done <- err
		}
		return
	}
}

// callSafely turns a panic in fn into an error, so that one request's
// bug fails that request (it panics again when it runs alone) and not
// the others of its batch.
func callSafely(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in a write: %v", p)
		}
	}()
	return fn(tx)
}
