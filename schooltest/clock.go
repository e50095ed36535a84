package schooltest

import (
	"sync"
	"time"
)

// Epoch is when the tests' clocks start, unless they start now.
var Epoch = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// Clock is a clock the test moves, safe for the server's goroutines.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock is a clock that reads start until moved.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time, for a configuration's Now.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
