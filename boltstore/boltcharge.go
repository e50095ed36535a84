package boltstore

import (
	"time"

	"github.com/schoolgate/schoolgate/internal/cputime"
)

// What a group commit costs whom. The call that leads a group commit
// runs every call's function and then bbolt's page spill and writes,
// while every request of the group has given its share of the instance
// back (store.Waiter) to wait for the sync. Measured under a flood of
// code exchanges, that work was about half of what an exchange costs the
// gateway: counted for no request, a school flooding the token endpoint
// kept its neighbours from their share. So each call is charged its own
// function's time (read around it on the clock: a function does no I/O)
// and an equal part of the rest of the commit's processor time, read on
// the leader's thread clock from inside the transaction (the wait for
// bbolt's lock is no work, and the thread may run other goroutines
// meanwhile), which counts no time spent waiting for the disk. The thread clock is read once before and once after the commit;
// when the leader's goroutine moved to another thread meanwhile (it may,
// when it comes back from a system call and finds no processor free),
// the rest is not known and only the functions are charged. A write
// committed alone while its request is paused (a registration's, or one
// that failed in a group and runs again) is charged its commit's thread
// CPU time the same way.

// chargeMeter reads the leader's thread clock around a commit.
type chargeMeter struct {
	cpu, wall int64
	thread    int32
	ok        bool
}

func startCharge() chargeMeter {
	cpu, thread, ok := cputime.Thread()
	return chargeMeter{cpu: cpu, wall: time.Now().UnixNano(), thread: thread, ok: ok}
}

// maxUsed bounds what a thread clock's reading charges: a commit's own
// work for its group is tens of microseconds; more is the thread having
// run other goroutines while the commit's goroutine waited (the meter
// starts inside the transaction, past the wait for bbolt's lock, but a
// remap of a growing file may still wait for readers).
const maxUsed = int64(2 * time.Millisecond)

// used is the thread's CPU time since the meter started, at most the
// time since and maxUsed; 0 when the goroutine moved to another thread
// meanwhile, or the meter never started (the commit failed before its
// transaction began).
func (m chargeMeter) used() int64 {
	if !m.ok {
		return 0
	}
	cpu, thread, ok := cputime.Thread()
	if !ok || thread != m.thread {
		return 0
	}
	return max(min(cpu-m.cpu, time.Now().UnixNano()-m.wall, maxUsed), 0)
}

// share adds to each call's spent (its function's time, set by
// commitBatch) its part of the rest of the commit.
func (m chargeMeter) share(batch []*commitCall) {
	if len(batch) == 0 {
		return
	}
	used := m.used()
	var fns int64
	for _, c := range batch {
		fns += int64(c.spent)
	}
	if rest := used - fns; rest > 0 {
		part := time.Duration(rest / int64(len(batch)))
		for _, c := range batch {
			c.spent += part
		}
	}
}
