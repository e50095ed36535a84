package school

import (
	"context"
	"sync"
	"time"

	"github.com/schoolgate/schoolgate/internal/schedule"
	"github.com/schoolgate/schoolgate/store"
)

// A school's usage (docs/operator.md, "Usage"): counted in memory by
// usageRecorder on the request path, fed by Serve (requests and their
// durations) and by the same Observer calls the metrics count (tokens,
// refusals and their causes), and added to the store every minute in the
// background and when the school is let go of, so that the figures
// outlive a let-go and a restart and are one across instances sharing a
// database.

// usageFlushEvery is how often a school's counts are added to the store.
const usageFlushEvery = time.Minute

// usageCarryMax bounds the minutes of counts a failing store leaves in
// memory: past it, the oldest minute's counts are added to the next
// one's, later than they were served but not lost.
const usageCarryMax = 16

// usage is a school's counts and their way to the store.
type usage struct {
	rec usageRecorder
	// mu makes one flush at a time, and a view read the store and the
	// memory in between two flushes, so that a count in flight is seen
	// once. Under it: carry, stored.
	mu sync.Mutex
	// carry are counts a flush failed to store, added at the next.
	carry []store.UsageDelta
	// stored is the last activity stored.
	stored time.Time
}

// scheduleUsage adds the flush to the shared scheduler, each school at
// its own second of the minute.
func (s *Site) scheduleUsage(ctx context.Context) {
	s.cfg.Scheduler.Add(ctx, schedule.Offset(s.cfg.Issuer+" usage", usageFlushEvery), s.usageJob)
}

// usageJob is the minute's flush. One cut short because the school is
// let go of (its job's context ended) is no failure and says nothing:
// FlushUsage stores the counts then.
func (s *Site) usageJob(job context.Context) time.Duration {
	ctx, cancel := context.WithTimeout(job, storeCallTimeout)
	defer cancel()
	if err := s.flushUsage(ctx, false); err != nil && job.Err() == nil {
		s.log.Warn("storing the school's usage failed; the counts are kept and stored with the next minute's",
			"issuer", s.cfg.Issuer, "error", err)
	}
	return usageFlushEvery
}

// FlushUsage adds everything the school counted and has not stored yet,
// the current minute's too, to the store. Call it when the school is let
// go of or the process stops, before the store is closed: what is
// counted after it is lost.
// The connection doctor's steps noted and not stored yet go with them.
func (s *Site) FlushUsage(ctx context.Context) error {
	s.flushSteps(ctx)
	return s.flushUsage(ctx, true)
}

// flushUsage adds the counts of the minutes past (every minute's with
// all) to the store, with the last activity when it moved.
func (s *Site) flushUsage(ctx context.Context, all bool) error {
	u := &s.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	deltas := append(u.carry, u.rec.drain(s.now(), all)...)
	last := u.rec.lastActive()
	if last.After(u.stored) {
		if len(deltas) == 0 {
			deltas = append(deltas, store.UsageDelta{Minute: last.Truncate(time.Minute)})
		}
		deltas[len(deltas)-1].LastActive = last
	}
	if len(deltas) == 0 {
		return nil
	}
	if err := s.cfg.Store.AddUsage(ctx, deltas); err != nil {
		u.carry = carryAtMost(deltas, usageCarryMax)
		return err
	}
	u.carry = nil
	if last.After(u.stored) {
		u.stored = last
	}
	return nil
}

// carryAtMost keeps deltas to n, adding the oldest to the next.
func carryAtMost(deltas []store.UsageDelta, n int) []store.UsageDelta {
	for len(deltas) > n {
		next := &deltas[1]
		next.Add(&deltas[0].UsageCounts)
		if deltas[0].LastActive.After(next.LastActive) {
			next.LastActive = deltas[0].LastActive
		}
		deltas = deltas[1:]
	}
	return deltas
}

// Usage is the school's usage: what the store holds (the counts every
// instance has added) and what this instance has counted and not stored
// yet. Another instance's counts of the last minute are in the store
// after its next flush.
func (s *Site) Usage(ctx context.Context) (*store.Usage, error) {
	u := &s.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	got, err := s.cfg.Store.LoadUsage(ctx)
	if err != nil {
		return nil, err
	}
	got.Add(u.carry)
	got.Add(u.rec.peek(s.now()))
	if last := u.rec.lastActive(); last.After(got.LastActive) {
		got.LastActive = last
	}
	return got, nil
}

// usageObserver feeds the school's usage from the Observer calls the
// metrics count, which it passes on. Each of the school's own refusals
// comes through here once: a capacity cause, or a refusal of what the
// request sent.
type usageObserver struct {
	Observer
	u   *usageRecorder
	now func() time.Time
}

// Codes and outcomes that name a cause rather than a refusal.
const (
	codeRateLimited = "rate_limited"
	codeUnavailable = "temporarily_unavailable"
	// callerUnavailable is an /mcp request whose token could not be
	// checked: the store failed.
	callerUnavailable = "unavailable"
)

func (o *usageObserver) TokenIssued(grantType string) {
	o.Observer.TokenIssued(grantType)
	o.u.token(o.now())
}

func (o *usageObserver) Refused(endpoint, code string) {
	o.Observer.Refused(endpoint, code)
	switch code {
	case codeRateLimited:
		o.u.cause(store.CauseRateLimited, o.now())
	case codeUnavailable:
		o.u.cause(store.CauseStoreUnavailable, o.now())
	default:
		o.u.refusal(o.now())
	}
}

func (o *usageObserver) ProtectedOutcome(outcome string) {
	o.Observer.ProtectedOutcome(outcome)
	switch outcome {
	case "allowed":
	case codeUnavailable:
		o.u.cause(store.CauseStoreUnavailable, o.now())
	default:
		o.u.refusal(o.now())
	}
}

func (o *usageObserver) MCPCaller(caller string) {
	o.Observer.MCPCaller(caller)
	switch caller {
	case "refused":
		o.u.refusal(o.now())
	case callerUnavailable:
		o.u.cause(store.CauseStoreUnavailable, o.now())
	}
}

// Refusal counts the request the school answered itself for its legacy
// server, by cause.
func (o *usageObserver) Refusal(cause store.Cause) {
	o.Observer.Refusal(cause)
	o.u.cause(cause, o.now())
}
