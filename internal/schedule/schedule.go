// Package schedule runs the periodic work of many schools (expiry purges,
// catalog and document refreshes) on one dispatcher and a bounded number
// of workers, instead of a goroutine and a timer per school and job: a
// thousand idle schools cost a thousand heap entries, not two thousand
// sleeping goroutines.
package schedule

import (
	"container/heap"
	"context"
	"hash/fnv"
	"sync"
	"time"
)

// Func is one run of a job. It returns how long to wait before the next
// run; zero or less ends the job.
type Func func(ctx context.Context) time.Duration

// Scheduler runs jobs when they are due, at most Workers at a time. The
// zero value is not usable; use New.
type Scheduler struct {
	workers chan struct{}

	mu      sync.Mutex
	queue   queue
	wake    chan struct{}
	running bool // the dispatcher goroutine is alive
	active  int  // jobs added and not yet ended
}

// New returns a scheduler running at most workers jobs at once.
func New(workers int) *Scheduler {
	return &Scheduler{workers: make(chan struct{}, max(workers, 1)), wake: make(chan struct{}, 1)}
}

type job struct {
	ctx   context.Context
	run   Func
	due   time.Time
	index int // in the queue; -1 while running or removed
	ended bool
	stop  func() bool
}

// Add runs fn after first, then after each delay fn returns, until ctx
// ends or fn returns a delay of zero or less. A run in progress when ctx
// ends finishes (fn sees ctx done); no run starts after.
func (s *Scheduler) Add(ctx context.Context, first time.Duration, fn Func) {
	j := &job{ctx: ctx, run: fn, index: -1}
	// The job leaves the queue as soon as its owner ends, so that an
	// ended school is not kept reachable until its next due time. A job
	// not queued then (running, or not pushed yet) ends when it is next
	// looked at.
	j.stop = context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if j.index >= 0 {
			heap.Remove(&s.queue, j.index)
			s.end(j)
			s.poke()
		}
	})
	s.mu.Lock()
	s.active++
	s.push(j, time.Now().Add(first))
	s.mu.Unlock()
}

// Offset spreads jobs of the same period: a stable point in [0, period)
// for key, so that a thousand schools' hourly purges do not all start on
// the same second, and a restart keeps each school's slot.
func Offset(key string, period time.Duration) time.Duration {
	if period <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return time.Duration(h.Sum64() % uint64(period))
}

// Active reports the jobs added and not yet ended.
func (s *Scheduler) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// push queues j at due and makes sure the dispatcher looks at it. The
// caller holds s.mu.
func (s *Scheduler) push(j *job, due time.Time) {
	j.due = due
	heap.Push(&s.queue, j)
	if !s.running {
		s.running = true
		go s.dispatch()
	}
	s.poke()
}

// poke makes the dispatcher look at the queue again.
func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// end marks j ended. The caller holds s.mu.
func (s *Scheduler) end(j *job) {
	if j.ended {
		return
	}
	j.ended = true
	s.active--
}

// dispatch waits for the earliest job, starts it on a worker, and exits
// when the queue is empty (push starts it again).
func (s *Scheduler) dispatch() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		wait := time.Until(s.queue[0].due)
		if wait <= 0 {
			j := heap.Pop(&s.queue).(*job)
			s.mu.Unlock()
			s.workers <- struct{}{}
			go s.runOnce(j)
			continue
		}
		s.mu.Unlock()
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-s.wake:
		}
	}
}

// runOnce runs j and queues its next run.
func (s *Scheduler) runOnce(j *job) {
	next := time.Duration(0)
	if j.ctx.Err() == nil {
		next = j.run(j.ctx)
	}
	<-s.workers
	s.mu.Lock()
	defer s.mu.Unlock()
	if next <= 0 || j.ctx.Err() != nil {
		j.stop()
		s.end(j)
		return
	}
	s.push(j, time.Now().Add(next))
}

// queue is a min-heap of jobs by due time.
type queue []*job

func (q queue) Len() int           { return len(q) }
func (q queue) Less(i, k int) bool { return q[i].due.Before(q[k].due) }
func (q queue) Swap(i, k int) {
	q[i], q[k] = q[k], q[i]
	q[i].index, q[k].index = i, k
}
func (q *queue) Push(x any) {
	j := x.(*job)
	j.index = len(*q)
	*q = append(*q, j)
}
func (q *queue) Pop() any {
	old := *q
	j := old[len(old)-1]
	old[len(old)-1] = nil
	j.index = -1
	*q = old[:len(old)-1]
	return j
}
