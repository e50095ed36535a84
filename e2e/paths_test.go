package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/demoschool"
)

// rawRequest sends a request line exactly as given, as curl --path-as-is
// does: Go's client would escape a backslash or a NUL on the way.
func rawRequest(t *testing.T, origin, method, target, token, body string) response {
	t.Helper()
	u, err := url.Parse(origin)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Length: %d\r\n", method, target, u.Host, len(body))
	if token != "" {
		req += "Authorization: Bearer " + token + "\r\n"
	}
	if body != "" {
		req += "Content-Type: application/json\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"+body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

// protectedLog is every request that reached one of the demo school's
// prefix-mounted protected handlers.
func protectedLog(t *testing.T, school string) []demoschool.ProtectedEntry {
	t.Helper()
	_, _, body := get(t, school+"/__demo/protected-log")
	var log struct{ Requests []demoschool.ProtectedEntry }
	if err := json.Unmarshal(body, &log); err != nil {
		t.Fatalf("protected log: %v %s", err, body)
	}
	return log.Requests
}

// TestHostilePaths sends the hostile-input corpus through a real Caddy to a
// demo school whose protected handlers are mounted by prefix on the path as
// received (so "/admin/api/students/../courses" would reach the students
// area): each request is refused, or forwarded as the path the gateway
// judged, and no protected handler ever sees a request without identity.
func TestHostilePaths(t *testing.T) {
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	clients := vendorBlock("Member App", "member-app", redirect, "member", "openid account:read") +
		vendorBlock("Courses Tool", "courses-tool", redirect, "operator", "openid courses:read")
	gw := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "a"), clients))
	a := gw.URL
	member := tokenFor(t, a, "member-app", redirect, "openid account:read", "student@demo.school", "student")
	courses := tokenFor(t, a, "courses-tool", redirect, "openid courses:read", "owner@demo.school", "owner")

	const refused = 400
	tests := []struct {
		name, method, target, token, body string
		status                            int
		forwardedAs, handler              string // "" when no protected handler may see it
	}{
		// An operator token holding only courses:read.
		{"dot-dot into courses", "GET", "/admin/api/students/../courses", courses.AccessToken, "", 200, "/admin/api/courses", "admin:courses"},
		{"encoded slashes", "GET", "/admin/api/students%2f..%2fcourses", courses.AccessToken, "", refused, "", ""},
		{"encoded dots", "GET", "/admin/api/students/%2e%2e/courses", courses.AccessToken, "", 200, "/admin/api/courses", "admin:courses"},
		{"dot-dot with params", "GET", "/admin/api/students/..;/courses", courses.AccessToken, "", refused, "", ""},
		{"backslashes", `GET`, `/admin/api/students\..\courses`, courses.AccessToken, "", refused, "", ""},
		{"dot then dot-dot", "GET", "/admin/api/students/./../courses", courses.AccessToken, "", 200, "/admin/api/courses", "admin:courses"},
		{"double-encoded dots", "GET", "/admin/api/students/%252e%252e/courses", courses.AccessToken, "", refused, "", ""},
		{"overlong dots", "GET", "/admin/api/students/%c0%ae%c0%ae/courses", courses.AccessToken, "", refused, "", ""},
		{"fullwidth dots", "GET", "/admin/api/students/%ef%bc%8e%ef%bc%8e/courses", courses.AccessToken, "", refused, "", ""},
		{"dot-dot and space", "GET", "/admin/api/courses/..%20/students", courses.AccessToken, "", refused, "", ""},
		{"students itself", "GET", "/admin/api/students", courses.AccessToken, "", 403, "", ""},
		{"upper-case students", "GET", "/ADMIN/API/Students", courses.AccessToken, "", 403, "", ""},
		{"merged slashes", "GET", "//admin//api//courses", courses.AccessToken, "", 200, "/admin/api/courses", "admin:courses"},
		// Without a token.
		{"out of admin to login", "GET", "/admin/api/../../login", "", "", 200, "", ""},
		{"encoded slashes to students", "GET", "/admin/api/courses/..%2f..%2fstudents", "", "", refused, "", ""},
		{"delete back to the root", "DELETE", "/admin/api/x/../../../", "", "", 404, "", ""},
		{"climb above the root", "DELETE", "/admin/api/x/../../../../", "", "", refused, "", ""},
		{"out of the account API", "POST", "/account/graphql/../../", "", viewerQuery, 404, "", ""},
		{"NUL after the account API", "POST", "/account/graphql%00", "", viewerQuery, refused, "", ""},
		{"escape into admin", "GET", "/static/..;/admin/api/students", "", "", refused, "", ""},
		{"below the account API", "POST", "/account/graphql/x", "", viewerQuery, 403, "", ""},
		{"string prefix of the account API", "POST", "/account/graphqlx", "", viewerQuery, 403, "", ""},
		// A member token.
		{"NUL with a member token", "POST", "/account/graphql%00", member.AccessToken, viewerQuery, refused, "", ""},
		{"member through dot-dot", "POST", "/x/../account/graphql", member.AccessToken, viewerQuery, 200, "/account/graphql", "account"},
		{"member below the account API", "POST", "/account/graphql/x", member.AccessToken, viewerQuery, 403, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(protectedLog(t, sch.URL))
			r := rawRequest(t, a, tt.method, tt.target, tt.token, tt.body)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if r.status == refused {
				// Every refusal here concerns a protected path: RFC 6750.
				if jsonOf(t, r.body)["error"] != "invalid_request" || r.header.Get("WWW-Authenticate") == "" {
					t.Errorf("refusal %v %s", r.header, r.body)
				}
			}
			after := protectedLog(t, sch.URL)[before:]
			if tt.forwardedAs == "" {
				if len(after) != 0 {
					t.Fatalf("a protected handler saw %+v", after)
				}
				return
			}
			if len(after) != 1 || after[0].Path != tt.forwardedAs || after[0].Handler != tt.handler || after[0].Subject == "" {
				t.Fatalf("protected handlers saw %+v, want one request for %s at %s with identity", after, tt.forwardedAs, tt.handler)
			}
		})
	}
	for _, e := range protectedLog(t, sch.URL) {
		if e.Subject == "" {
			t.Errorf("a protected handler saw a request without the gateway's identity: %+v", e)
		}
	}

	// Elsewhere a legitimate encoded slash is forwarded as sent, and the
	// query is kept byte for byte when the path is rewritten.
	if r := rawRequest(t, a, "GET", "/files/a%2Fb", "", ""); r.status != 404 {
		t.Errorf("encoded slash elsewhere: %d %s", r.status, r.body)
	}
	if r := rawRequest(t, a, "GET", "/x/../login?return_to=%2Fcourses%2F&a=%20b", "", ""); r.status != 200 {
		t.Errorf("rewritten pass-through: %d %s", r.status, r.body)
	}
	const query = "x=%2F..%2F&y=a+b&&z"
	if r := rawRequest(t, a, "GET", "/admin/api/students/../courses?"+query, courses.AccessToken, ""); r.status != 200 {
		t.Fatalf("rewritten protected request: %d %s", r.status, r.body)
	}
	_, _, body := get(t, sch.URL+"/__demo/last-request")
	if rec := jsonOf(t, body); rec["path"] != "/admin/api/courses" || rec["query"] != query {
		t.Errorf("upstream saw path %v query %v, want /admin/api/courses and %s", rec["path"], rec["query"], query)
	}
	// An absolute-form request without a path is the root, not a refusal.
	if r := rawRequest(t, a, "GET", a, "", ""); r.status != 200 {
		t.Errorf("absolute form without a path: %d %s", r.status, r.body)
	}
	if r := rawRequest(t, a, "GET", "/%2e%2e/etc/passwd", "", ""); r.status != refused || r.header.Get("Content-Type") == "application/json" {
		t.Errorf("climb elsewhere: %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
}
