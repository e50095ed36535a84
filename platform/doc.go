// Package platform is the Caddy-free part of a platform of schools
// (school_platform): what keeps thousands of schools of a registry served
// by one handler, whatever builds each school. So far it holds how a
// built school is held and let go of: a Hold counts the requests in
// flight in it and closes it, so that a request never meets a school let
// go of, and a Bound keeps at most max_active schools built, letting go
// of the least recently used idle ones first. The adapter (caddymodule)
// builds the schools and lets go of their state (store, proxy) when
// these say so.
package platform
