package authserver

import (
	"context"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// reloadTimeout bounds the store reads that follow a change made by
// another instance.
const reloadTimeout = 5 * time.Second

// follow keeps what the server holds in memory in step with the other
// instances of the site, when its store is shared: revocations empty the
// token cache, key rotations reload the keys. It stops when ctx ends.
func (s *Server) follow(ctx context.Context) {
	w, ok := s.store.(store.Watcher)
	if !ok {
		return
	}
	stop := w.Watch(s.changed)
	context.AfterFunc(ctx, stop)
}

// changed applies one change; it runs on the store's watcher goroutine.
func (s *Server) changed(c store.Change) {
	if c == store.ChangeTokens || c == store.ChangeAll {
		s.cache.purge()
	}
	if c == store.ChangeKeys || c == store.ChangeAll {
		ctx, cancel := context.WithTimeout(context.Background(), reloadTimeout)
		defer cancel()
		if err := s.keys.Reload(ctx); err != nil {
			// The poll or the next notification tries again; until then
			// the keys in memory keep signing and verifying.
			s.cfg.Logger.Warn("reloading signing keys", "error", err)
		}
	}
}

// claim reports whether this instance runs the periodic job now. A store
// that is not shared has no other instance to leave it to.
func (s *Server) claim(ctx context.Context, job string, every time.Duration) bool {
	sch, ok := s.store.(store.Scheduler)
	if !ok {
		return true
	}
	mine, err := sch.ClaimRun(ctx, job, every)
	if err != nil {
		s.cfg.Logger.Warn("claiming a periodic job", "job", job, "error", err)
		return false
	}
	return mine
}
