package platform

import (
	"sync"
	"time"
)

// HostsLoggedPerMinute bounds the hosts a HostLog logs in a minute, and so
// its memory.
const HostsLoggedPerMinute = 100

// HostLog decides which of many events named by a host are logged (the
// on-demand certificates refused for hosts no school answers on, which
// anyone may provoke with a handshake): a host's first in each minute of
// the clock, for the first HostsLoggedPerMinute hosts of the minute, and
// one line when that number is reached. Its map is cleared when the
// minute changes, so it never holds more than that number of hosts.
type HostLog struct {
	Now    func() time.Time // time.Now, or a test's clock
	mu     sync.Mutex
	minute int64
	hosts  map[string]struct{}
	full   bool
}

// What Admit decides for one event.
const (
	LogNothing = iota // nothing: the host was logged this minute, or too many were
	LogHost           // the event, the host's first of the minute
	LogFull           // one line: more hosts this minute than are logged
)

// Admit decides for an event of host now.
func (l *HostLog) Admit(host string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.Now().Unix() / 60; m != l.minute || l.hosts == nil {
		l.minute, l.full = m, false
		if l.hosts == nil {
			l.hosts = make(map[string]struct{}, HostsLoggedPerMinute)
		}
		clear(l.hosts)
	}
	if _, seen := l.hosts[host]; seen {
		return LogNothing
	}
	if len(l.hosts) >= HostsLoggedPerMinute {
		if l.full {
			return LogNothing
		}
		l.full = true
		return LogFull
	}
	l.hosts[host] = struct{}{}
	return LogHost
}

// Len is how many hosts the log holds this minute.
func (l *HostLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.hosts)
}

// Reset forgets the minute, as if a new one began.
func (l *HostLog) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hosts = nil
}
