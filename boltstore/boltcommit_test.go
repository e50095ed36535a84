package boltstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
	"github.com/schoolgate/schoolgate/store/storetest"
)

// commitProbe holds a store's first write inside its transaction until
// the writes of a test have queued behind it, and counts the commits.
type commitProbe struct {
	s       *boltStore
	release chan struct{}
	commits atomic.Int32
	lastTx  atomic.Pointer[bolt.Tx]
}

func newCommitProbe(t *testing.T) *commitProbe {
	t.Helper()
	st, err := Open(filepath.Join(t.TempDir(), "school.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &commitProbe{s: st.(*boltStore), release: make(chan struct{})}
}

// put is a write of key, counting its transaction's commit once.
func (p *commitProbe) put(key string, fail error) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		if p.lastTx.Swap(tx) != tx {
			tx.OnCommit(func() { p.commits.Add(1) })
		}
		if err := rare(tx, bucketSettings).Put([]byte(key), []byte("v")); err != nil {
			return err
		}
		if key == "panics" {
			panic("a bug in a write")
		}
		return fail
	}
}

// holdLeader starts a write that leads and waits in its transaction for
// release; it returns when the leader holds the transaction.
func (p *commitProbe) holdLeader(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	inside := make(chan struct{})
	wg.Go(func() {
		err := p.s.write(context.Background(), func(tx *bolt.Tx) error {
			close(inside)
			<-p.release
			return p.put("leader", nil)(tx)
		})
		if err != nil {
			t.Errorf("leader: %v", err)
		}
	})
	<-inside
}

// waitQueued waits until n writes wait for the next commit.
func (p *commitProbe) waitQueued(n int) {
	for {
		p.s.group.mu.Lock()
		queued := len(p.s.group.pending)
		p.s.group.mu.Unlock()
		if queued == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (p *commitProbe) has(key string) bool {
	found := false
	_ = p.s.view(context.Background(), func(tx *bolt.Tx) error {
		found = rare(tx, bucketSettings).Get([]byte(key)) != nil
		return nil
	})
	return found
}

// Writes that queue during a commit share the next one: twenty writes
// behind a leader are two commits, not twenty-one.
func TestGroupCommitSharesCommits(t *testing.T) {
	p := newCommitProbe(t)
	var wg sync.WaitGroup
	p.holdLeader(t, &wg)
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = "queued-" + string(rune('a'+i))
		wg.Go(func() {
			if err := p.s.write(context.Background(), p.put(keys[i], nil)); err != nil {
				t.Errorf("%s: %v", keys[i], err)
			}
		})
	}
	p.waitQueued(len(keys))
	close(p.release)
	wg.Wait()
	if n := p.commits.Load(); n != 2 {
		t.Errorf("%d commits for 21 writes; want 2 (the leader's, then the queue's)", n)
	}
	for _, k := range append(keys, "leader") {
		if !p.has(k) {
			t.Errorf("%s was not stored", k)
		}
	}
	// A lone writer afterwards commits at once, alone.
	if err := p.s.write(context.Background(), p.put("alone", nil)); err != nil || !p.has("alone") || p.commits.Load() != 3 {
		t.Errorf("lone write: %v, stored %v, commits %d", err, p.has("alone"), p.commits.Load())
	}
}

// A write that fails or panics in a shared transaction fails alone: the
// others of its batch commit, and nothing of it is stored.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	p := newCommitProbe(t)
	var wg sync.WaitGroup
	p.holdLeader(t, &wg)
	boom := errors.New("boom")
	results := map[string]error{}
	var mu sync.Mutex
	for i, k := range []string{"first", "fails", "panics", "last"} {
		var fail error
		if k == "fails" {
			fail = boom
		}
		wg.Go(func() {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						err = errors.New("panicked")
					}
				}()
				err = p.s.write(context.Background(), p.put(k, fail))
			}()
			mu.Lock()
			results[k] = err
			mu.Unlock()
		})
		p.waitQueued(i + 1)
	}
	close(p.release)
	wg.Wait()
	want := map[string]error{"first": nil, "last": nil}
	for k, err := range results {
		switch k {
		case "fails":
			if !errors.Is(err, boom) || p.has(k) {
				t.Errorf("fails: %v, stored %v; want its own error and nothing stored", err, p.has(k))
			}
		case "panics":
			if err == nil || err.Error() != "panicked" || p.has(k) {
				t.Errorf("panics: %v, stored %v; want the panic in its own call", err, p.has(k))
			}
		default:
			if err != want[k] || !p.has(k) {
				t.Errorf("%s: %v, stored %v; want it committed", k, err, p.has(k))
			}
		}
	}
}

// A cancelled request writes nothing and does not queue.
func TestGroupCommitRefusesCancelled(t *testing.T) {
	p := newCommitProbe(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.s.write(ctx, p.put("late", nil)); !errors.Is(err, context.Canceled) || p.has("late") {
		t.Errorf("cancelled write: %v, stored %v", err, p.has("late"))
	}
}

// Codes and tokens arrive in key order (their keys start with their issue
// time), and the hot write path fills their pages instead of leaving
// each half empty behind the last, as bbolt's default split does.
func TestAppendedBucketsFillPages(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "school.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := st.(*boltStore)
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	for i := range 2000 {
		key := fmt.Sprintf("%016x%064x", 1<<52+i, i)
		if err := st.PutCode(ctx, key, &store.Code{ExpiresAt: exp}); err != nil {
			t.Fatal(err)
		}
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		st := tx.Bucket(bucketCodes).Stats()
		if fill := float64(st.LeafInuse) / float64(st.LeafAlloc); fill < 0.8 {
			t.Errorf("codes' leaf pages %.0f%% full (%d pages), want 80%% or more", fill*100, st.LeafPageN)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The writes of a group commit are charged to their own requests: each
// its function's time and a part of the commit's, while paused, so that
// the leader's work for the group counts for the schools whose writes it
// carries (the fair share, package admission).
func TestGroupCommitChargesEachWrite(t *testing.T) {
	p := newCommitProbe(t)
	var wg sync.WaitGroup
	p.holdLeader(t, &wg)
	const spin = 5 * time.Millisecond
	waiters := make([]*storetest.Waiter, 6)
	for i := range waiters {
		waiters[i] = &storetest.Waiter{}
		key := fmt.Sprintf("queued-%d", i)
		wg.Go(func() {
			ctx := store.WithWaiter(context.Background(), waiters[i])
			err := p.s.write(ctx, func(tx *bolt.Tx) error {
				if i == 0 { // a costly write: its time is its own
					for begin := time.Now(); time.Since(begin) < spin; {
					}
				}
				return p.put(key, nil)(tx)
			})
			if err != nil {
				t.Errorf("%s: %v", key, err)
			}
		})
	}
	p.waitQueued(len(waiters))
	close(p.release)
	wg.Wait()
	for i, w := range waiters {
		switch {
		case w.ChargedAwake:
			t.Errorf("write %d was charged after its request resumed", i)
		case w.Charged <= 0:
			t.Errorf("write %d was charged nothing for its share of the commit", i)
		case i == 0 && w.Charged < spin:
			t.Errorf("the costly write was charged %v, less than its function's %v", w.Charged, spin)
		case i > 0 && w.Charged >= spin:
			t.Errorf("write %d was charged %v: the costly write's time is not its", i, w.Charged)
		}
	}
}

// A write committed alone while its request is paused is charged its
// commit's work too (its thread's CPU time, at most the time it took).
func TestSoloCommitCharges(t *testing.T) {
	p := newCommitProbe(t)
	// The goroutine may move to another thread during the commit's sync,
	// and then nothing is charged: five writes in a row never all do.
	var charged time.Duration
	for i := range 5 {
		w := &storetest.Waiter{}
		ctx := store.WithWaiter(context.Background(), w)
		begin := time.Now()
		err := p.s.update(ctx, func(tx *bolt.Tx) error {
			for spin := time.Now(); time.Since(spin) < time.Millisecond; {
			}
			return rare(tx, bucketSettings).Put([]byte(fmt.Sprint("solo", i)), []byte("v"))
		})
		took := time.Since(begin)
		if err != nil {
			t.Fatal(err)
		}
		if w.ChargedAwake || w.Charged < 0 || w.Charged > took || w.Depth != 0 {
			t.Fatalf("charged %v of %v, awake %v, left paused %d deep", w.Charged, took, w.ChargedAwake, w.Depth)
		}
		charged = max(charged, w.Charged)
	}
	if charged == 0 {
		t.Error("five writes committed alone were charged nothing")
	}
}
