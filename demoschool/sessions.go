package demoschool

import (
	"crypto/rand"
	"net/http"
	"sync"
	"time"
)

// SessionCookie is the name of the browser session cookie. The gateway does
// not need to know it: it forwards the whole Cookie header to /api/session.
const SessionCookie = "demoschool_session"

// sessionTTL bounds how long a forgotten browser stays signed in.
const sessionTTL = 12 * time.Hour

// sessionStore maps random session ids to subjects. Expired entries are
// dropped when they are looked up or when a new session is created, which
// is enough for a demo that never holds more than a handful.
type sessionStore struct {
	mu       sync.Mutex
	sessions map[string]session
	now      func() time.Time
}

type session struct {
	sub     string
	expires time.Time
}

func newSessionStore(now func() time.Time) *sessionStore {
	return &sessionStore{sessions: map[string]session{}, now: now}
}

// create starts a session for sub and returns its id (256 random bits).
func (s *sessionStore) create(sub string) string {
	id := rand.Text() + rand.Text()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, v := range s.sessions {
		if !now.Before(v.expires) {
			delete(s.sessions, k)
		}
	}
	s.sessions[id] = session{sub: sub, expires: now.Add(sessionTTL)}
	return id
}

// lookup returns the subject of a live session, or "".
func (s *sessionStore) lookup(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.sessions[id]
	if !ok {
		return ""
	}
	if !s.now().Before(v.expires) {
		delete(s.sessions, id)
		return ""
	}
	return v.sub
}

func (s *sessionStore) delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, id)
}

// sessionID returns the session id the request carries, or "".
func sessionID(r *http.Request) string {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

// sessionCookie builds the cookie for id; an empty id clears it. Secure is
// set when the browser reached us over https, directly or through a proxy
// that says so (a client that forges the header only breaks its own
// sign-in, as its browser then drops the cookie on plain http).
func sessionCookie(r *http.Request, id string) *http.Cookie {
	c := &http.Cookie{
		Name:     SessionCookie,
		Value:    id,
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
		Secure:   r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https",
	}
	if id == "" {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(sessionTTL / time.Second)
	}
	return c
}
