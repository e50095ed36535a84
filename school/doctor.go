package school

import (
	"context"
	"time"

	"github.com/schoolgate/schoolgate/internal/schedule"
)

// stepsFlushEvery is how often the connection doctor's steps noted by
// this instance are added to the store: often enough that an operator
// looking from another instance sees an attempt made a moment ago, and
// rarely enough that a flood of refusals is a handful of upserts.
const stepsFlushEvery = 5 * time.Second

// scheduleSteps adds the doctor's flush to the shared scheduler.
func (s *Site) scheduleSteps(ctx context.Context) {
	s.cfg.Scheduler.Add(ctx, schedule.Offset(s.cfg.Issuer+" steps", stepsFlushEvery), func(ctx context.Context) time.Duration {
		s.flushSteps(ctx)
		return stepsFlushEvery
	})
}

// flushSteps stores the steps noted and not yet stored; what a failing
// store did not take stays for the next flush.
func (s *Site) flushSteps(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	if err := s.as.FlushSteps(ctx); err != nil {
		s.log.Warn("storing the connection doctor's steps failed; they are kept for the next flush",
			"issuer", s.cfg.Issuer, "error", err)
	}
}
