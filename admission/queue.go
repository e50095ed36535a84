package admission

import (
	"sync"
	"time"
)

// waiter is one request waiting for a slot.
type waiter struct {
	ch    chan struct{}
	timer *time.Timer
	seq   uint64
	// granted is set, under the gate's mu, when the waiter is handed a
	// slot.
	granted bool
}

// waiterPool keeps waiters, with their channel and timer, for the next
// wait: under a flood every request may wait.
var waiterPool = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &waiter{ch: make(chan struct{}, 1), timer: t}
}}

func newWaiter() *waiter { return waiterPool.Get().(*waiter) }

func (w *waiter) put() {
	w.granted, w.seq = false, 0
	waiterPool.Put(w)
}

// ring is a FIFO on a slice that moves its live items down when half of
// it is spent, so that a queue that never empties under a steady flood
// does not grow its array without end.
type ring[T any] struct {
	items []T
	first int
}

func (q *ring[T]) len() int { return len(q.items) - q.first }

func (q *ring[T]) head() T { return q.items[q.first] }

func (q *ring[T]) push(v T) {
	if q.first > 0 && q.first >= len(q.items)/2 {
		n := copy(q.items, q.items[q.first:])
		clear(q.items[n:])
		q.items, q.first = q.items[:n], 0
	}
	q.items = append(q.items, v)
}

// pushFront puts v before the others.
func (q *ring[T]) pushFront(v T) {
	if q.first > 0 {
		q.first--
		q.items[q.first] = v
		return
	}
	var zero T
	q.items = append(q.items, zero)
	copy(q.items[1:], q.items)
	q.items[0] = v
}

func (q *ring[T]) pop() T {
	v := q.items[q.first]
	var zero T
	q.items[q.first] = zero
	q.first++
	if q.first == len(q.items) {
		q.items, q.first = q.items[:0], 0
	}
	return v
}

// waiters are a school's waiting requests, oldest first.
type waiters struct{ ring[*waiter] }

// remove takes out a waiter that gave up, wherever it is.
func (q *waiters) remove(w *waiter) {
	for i := q.first; i < len(q.items); i++ {
		if q.items[i] == w {
			copy(q.items[i:], q.items[i+1:])
			q.items[len(q.items)-1] = nil
			q.items = q.items[:len(q.items)-1]
			break
		}
	}
	if q.first == len(q.items) {
		q.items, q.first = q.items[:0], 0
	}
}
