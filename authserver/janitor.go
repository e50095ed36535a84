package authserver

import (
	"context"
	"time"
)

// Purge runs one janitor pass: it deletes expired codes, pending requests
// and tokens, and audit events older than the retention, taking at most
// within. The host calls it periodically, on a
// scheduler shared by all its schools; with a shared store one instance of
// the site a period does the work.
func (s *Server) Purge(ctx context.Context, within time.Duration) {
	s.purgeExpired(ctx, within)
}
