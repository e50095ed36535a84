package policy

import (
	"net/url"
	"path"
	"strings"
	"unicode"
)

// PathAccount is the member Account API.
const PathAccount = "/account/graphql"

// Requirement is what a route asks of a token. An empty Audience accepts
// either audience; every scope listed is needed.
type Requirement struct {
	Audience string
	Scopes   []string
}

// Rule is an operator's override for admin-API routes. Method "" or "*"
// matches any method; Path matches exactly, or as a prefix when it ends in
// "*" ("/admin/api/reports/*"). Paths are compared after normalisation.
type Rule struct {
	Method      string
	Path        string
	Requirement Requirement
	// Deny refuses matching requests whatever the token.
	Deny bool
}

// Decision is the outcome of matching a request against the policy.
type Decision int

// Decisions. Deny is the default for anything no rule grants.
const (
	Deny Decision = iota
	Allow
	MethodNotAllowed
)

// Policy maps protected requests to requirements.
type Policy struct {
	AdminPrefix string
	Rules       []Rule
}

// IsProtected reports whether a request path belongs to a protected
// resource. It normalises first so that "//Account/./graphql" or a
// case-insensitive legacy router cannot be used to step around the check.
func IsProtected(p, adminPrefix string) bool {
	n := normalizePath(p)
	return n == PathAccount || underPrefix(n, normalizePath(adminPrefix))
}

// Decide returns the requirement for a request on a protected path, or a
// refusal. escapedPath is the request's path as sent (URL.EscapedPath).
// accountScopes is what the Account API needs; shared, never modified.
var accountScopes = []string{"account:read"}

func (p *Policy) Decide(method, escapedPath string) (Requirement, Decision) {
	n := normalizePath(escapedPath)
	if n == PathAccount {
		switch method {
		case "POST":
			return Requirement{Audience: AudienceMember, Scopes: accountScopes}, Allow
		default:
			return Requirement{}, MethodNotAllowed
		}
	}
	prefix := normalizePath(p.AdminPrefix)
	if !underPrefix(n, prefix) {
		return Requirement{}, Deny
	}
	for _, r := range p.Rules {
		if r.matches(method, n) {
			if r.Deny {
				return Requirement{}, Deny
			}
			req := r.Requirement
			if req.Audience == "" {
				req.Audience = AudienceOperator
			}
			return req, Allow
		}
	}
	return defaultAdminRequirement(method, strings.TrimPrefix(n, prefix))
}

// defaultAdminRequirement derives the scope from the first path segment
// (the area) and the method: reads need <area>:read, the rest <area>:write.
// Areas and accesses the seed's table lacks are denied.
func defaultAdminRequirement(method, rest string) (Requirement, Decision) {
	area, _, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	area = strings.ReplaceAll(area, "-", "_")
	access := "write"
	switch method {
	case "GET", "HEAD":
		access = "read"
	case "POST", "PUT", "PATCH", "DELETE":
	default:
		return Requirement{}, MethodNotAllowed
	}
	scope := areaScope(area, access)
	if scope == "" {
		return Requirement{}, Deny
	}
	return Requirement{Audience: AudienceOperator, Scopes: []string{scope}}, Allow
}

func (r *Rule) matches(method, p string) bool {
	if r.Method != "" && r.Method != "*" && !strings.EqualFold(r.Method, method) {
		return false
	}
	if pre, ok := strings.CutSuffix(r.Path, "*"); ok {
		return strings.HasPrefix(p, normalizePath(pre)) || p == strings.TrimSuffix(normalizePath(pre), "/")
	}
	return p == normalizePath(r.Path)
}

// Covers reports whether a rule path lies under the admin prefix, where
// rules apply; a rule elsewhere could never match.
func Covers(adminPrefix, rulePath string) bool {
	return underPrefix(normalizePath(strings.TrimSuffix(rulePath, "*")), normalizePath(adminPrefix))
}

func underPrefix(p, prefix string) bool {
	if prefix == "" || prefix == "/" {
		return false
	}
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// normalizePath folds the spellings under which a legacy server may serve
// one resource into one: percent-decoding (repeatedly, so %252e does not
// survive), backslashes, ";params", repeated slashes, dot segments, case
// and a trailing slash. The result is used for matching only; the request
// is forwarded as sent.
func normalizePath(p string) string {
	if isCleanPath(p) {
		return p // the common case, without allocating
	}
	return normalizeSlow(p)
}

// isCleanPath reports whether normalization would leave p as it is: an
// absolute path of lower-case letters, digits, '-', '_' and '.', with no
// empty, dot or dot-ending segment and no trailing slash. Only what
// normalizeSlow provably returns unchanged qualifies (FuzzCleanPath).
func isCleanPath(p string) bool {
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' {
		return false
	}
	segStart := 1
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			seg := p[segStart:i]
			if seg == "" || seg[len(seg)-1] == '.' {
				return false
			}
			segStart = i + 1
			continue
		}
		c := p[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func normalizeSlow(p string) string {
	for i := 0; i < 3 && strings.Contains(p, "%"); i++ {
		d, err := url.PathUnescape(p)
		if err != nil {
			break
		}
		p = d
	}
	p = strings.ReplaceAll(p, "\\", "/")
	// Some servers also drop ";params" and trailing dots or spaces of a
	// segment (IIS does); fold those until nothing changes.
	for i := 0; i < 4; i++ {
		segs := strings.Split(strings.ToLower(p), "/")
		for i, s := range segs {
			s, _, _ = strings.Cut(s, ";")
			if s != "." && s != ".." {
				// Trailing dots and white space in any order, in one
				// pass, so that the fold converges ("a\r.\r." is "a").
				s = strings.TrimRightFunc(strings.TrimLeftFunc(s, unicode.IsSpace),
					func(r rune) bool { return r == '.' || unicode.IsSpace(r) })
			}
			segs[i] = s
		}
		next := path.Clean("/" + strings.Join(segs, "/"))
		if next == p {
			break
		}
		p = next
	}
	return p
}
