// Package schooltest holds what the tests of several packages need of a
// school under test, so that it is written once: the people its legacy
// site knows and that site's session endpoint, its clients, a settable
// clock, a client that runs the authorization code flow through a
// server's handler, a member's token minted into a store, the checks of
// answers every layer must give alike, ES256 keys and JWS, and a buffer
// that loggers and processes may write while a test reads it.
//
// It stands on the store's contract, sitepath and jwx only, so that the
// tests of every package above them (authserver, pages, school, the
// adapter, the demo school, the benchmarks, e2e) may use it. Tests of one
// package keep their own helpers; the store's and the registry's test
// doubles are storetest's and registrytest's.
package schooltest
