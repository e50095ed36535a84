package demoschool

import (
	"net/http"
	"strings"
)

// legacyRouter dispatches the protected APIs the way many legacy stacks
// do, and deliberately not the way Go's ServeMux does (ServeMux cleans the
// path and redirects before any handler runs, which would hide a gateway
// that judges one path and forwards another): by prefix, ignoring case, on
// the path decoded once and cut at the first NUL, without resolving dot
// segments. So "/admin/api/students/../courses" reaches the students area
// here, and "/account/graphql%00" the Account API. The end-to-end tests
// rely on that to prove the gateway forwards only what it judged.
type legacyRouter struct {
	account, admin, rest http.Handler
}

func (lr legacyRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := legacyPath(r)
	switch {
	case hasPrefixFold(p, "/account/graphql"):
		lr.account.ServeHTTP(w, r)
	case hasPrefixFold(p, AdminPrefix) || strings.EqualFold(p, strings.TrimSuffix(AdminPrefix, "/")):
		lr.admin.ServeHTTP(w, r)
	default:
		lr.rest.ServeHTTP(w, r)
	}
}

// legacyPath is the path as a C-string-minded legacy stack sees it.
func legacyPath(r *http.Request) string {
	p := r.URL.Path
	if i := strings.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	return p
}

// adminRoute splits what follows the admin prefix into the area (its
// first segment: where a prefix router hands the request, dot segments
// and all) and the rest, the ID.
func adminRoute(r *http.Request) (area, id string) {
	p := legacyPath(r)
	if len(p) < len(AdminPrefix) {
		return "", ""
	}
	area, id, _ = strings.Cut(p[len(AdminPrefix):], "/")
	return strings.ToLower(area), strings.TrimSuffix(id, "/")
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
