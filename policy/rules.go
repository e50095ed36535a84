package policy

import (
	"strings"
	"sync"

	"github.com/schoolgate/schoolgate/sitepath"
)

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

	once sync.Once
	keys matchKeys // AdminPrefix and rule paths normalized, once
}

// matchKeys are the policy's paths as the request keys they are compared
// with, computed on first use instead of on every request.
type matchKeys struct {
	admin string
	rules []ruleKey
}

// ruleKey is a rule's path normalized; prefix rules ("…/*") match their
// base and what lies below it segment-wise, never a longer sibling.
type ruleKey struct {
	base   string
	prefix bool
}

func (p *Policy) matchKeys() *matchKeys {
	p.once.Do(func() {
		p.keys.admin = normalizePath(p.AdminPrefix)
		for _, r := range p.Rules {
			pre, prefix := strings.CutSuffix(r.Path, "*")
			p.keys.rules = append(p.keys.rules, ruleKey{base: normalizePath(pre), prefix: prefix})
		}
	})
	return &p.keys
}

// accountScopes is what the Account API needs; shared, never modified.
var accountScopes = []string{"account:read"}

// Decide returns the requirement for a request on a protected path, or a
// refusal. canonicalPath is what Canonical returned: the path that is
// forwarded if the request is allowed. Matching is on its loose reading
// (normalizePath), so case, ";params" and trailing dots, which some
// legacy routers ignore, cannot step around a rule.
func (p *Policy) Decide(method, canonicalPath string) (Requirement, Decision) {
	n := normalizePath(canonicalPath)
	if n == sitepath.AccountAPI {
		switch method {
		case "POST":
			return Requirement{Audience: AudienceMember, Scopes: accountScopes}, Allow
		default:
			return Requirement{}, MethodNotAllowed
		}
	}
	keys := p.matchKeys()
	prefix := keys.admin
	if !underPrefix(n, prefix) {
		// Below the Account API, or not protected at all.
		return Requirement{}, Deny
	}
	for i, r := range p.Rules {
		if r.matches(method, n, keys.rules[i]) {
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
// Areas and accesses the scope table (AllScopes) lacks are denied.
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

func (r *Rule) matches(method, p string, key ruleKey) bool {
	if r.Method != "" && r.Method != "*" && !strings.EqualFold(r.Method, method) {
		return false
	}
	if key.prefix {
		return p == key.base || strings.HasPrefix(p, strings.TrimSuffix(key.base, "/")+"/")
	}
	return p == key.base
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
