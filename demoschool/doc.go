// Package demoschool is a small legacy course-school web server: the
// upstream that the schoolgate gateway is put in front of in demos and
// end-to-end tests. It implements the legacy backend contract
// (docs/backend-contract.md) and nothing more:
//
//   - a cookie-session login (GET/POST /login, POST /logout) and the session
//     lookup the gateway calls (GET /api/session);
//   - the member Account API (POST /account/graphql), which names the member
//     only by the gateway's X-School-Subject header;
//   - a small operator admin API under /admin/api/, which trusts the
//     gateway's X-School-* headers;
//   - the public catalog feed (GET /catalog.json) and plain HTML pages;
//   - GET /healthz and a request recorder (GET /__demo/last-request).
//
// All state lives in memory and starts from the same seed data on every New, so
// tests get an isolated school each time. It is deliberately not a real
// product: there is no persistence, no sign-up and no rate limiting, and the
// recorder exposes the headers of the last API request to anyone who can
// reach the server. Run it on loopback only.
package demoschool
