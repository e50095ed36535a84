package storepool

import "sync"

// shared holds values by key, each opened by the first to ask for it and
// ended by the last to let go of it: what a key's holders share whatever
// the order in which configs start and end.
type shared[V any] struct {
	mu   sync.Mutex
	held map[string]*held[V]
}

// held is one key's value and how many hold it (under shared.mu).
type held[V any] struct {
	refs   int
	opened chan struct{} // closed once open returned
	v      V
	err    error
}

// acquire returns the key's value, opening it if nobody holds it; a
// second asker while it opens waits for it. A value that fails to open
// is held by nobody: the error goes to everyone who waited for it, and
// the next asker opens it again.
func (s *shared[V]) acquire(key string, open func() (V, error)) (V, error) {
	s.mu.Lock()
	if h, ok := s.held[key]; ok {
		h.refs++
		s.mu.Unlock()
		<-h.opened
		return h.v, h.err
	}
	if s.held == nil {
		s.held = map[string]*held[V]{}
	}
	h := &held[V]{refs: 1, opened: make(chan struct{})}
	s.held[key] = h
	s.mu.Unlock()
	h.v, h.err = open()
	if h.err != nil {
		s.mu.Lock()
		if s.held[key] == h {
			delete(s.held, key)
		}
		s.mu.Unlock()
	}
	close(h.opened)
	return h.v, h.err
}

// release lets go of the key's value, ending it when it was the last
// holder.
func (s *shared[V]) release(key string, end func(V) error) error {
	s.mu.Lock()
	h, ok := s.held[key]
	if !ok {
		s.mu.Unlock()
		return nil
	}
	h.refs--
	if h.refs > 0 {
		s.mu.Unlock()
		return nil
	}
	delete(s.held, key)
	s.mu.Unlock()
	<-h.opened
	if h.err != nil {
		return nil
	}
	return end(h.v)
}

// holders is how many hold the key's value, false when nobody does.
func (s *shared[V]) holders(key string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.held[key]
	if !ok {
		return 0, false
	}
	return h.refs, true
}
