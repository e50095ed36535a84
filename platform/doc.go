// Package platform is the Caddy-free part of a platform of schools
// (school_platform): what keeps thousands of schools of a registry served
// by one handler, whatever builds each school. A School is one record's
// school, built by its first request through a Builder (the adapter,
// caddymodule, implements it: a store opened, keys loaded, the proxy to
// the legacy server held), answering through the Builder's stand-in
// while it cannot be built and rebuilt in the background, and retired
// when its record changes. A Hold counts the requests in flight in a
// built school and closes it, so that a request never meets a school let
// go of; a Bound keeps at most max_active schools built, letting go of
// the least recently used idle ones first; a Table routes a request's
// host to its school, and Hosts takes a request through the table that
// serves to its school's Serve, which builds an idle school and hands the
// request to school.Site.Serve; a Watch keeps the table to the
// registry's changes.
package platform
