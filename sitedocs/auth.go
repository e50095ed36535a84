package sitedocs

import (
	"net/url"
	"strings"

	"github.com/schoolgate/schoolgate/policy"
)

// authView is what templates/auth.md shows of a site: the walkthrough
// with this site's URLs, scopes and admin areas.
type authView struct {
	page
	// Endpoints are the authorization server's, in the endpoint table.
	Endpoints []Endpoint
	// MemberScopes is what a member client requests, space-separated.
	MemberScopes string
	// AuthorizeQuery is the query of the walkthrough's authorization
	// request, encoded.
	AuthorizeQuery string
	ViewerQuery    string
	AdminAreas     []adminArea
	Scopes         []scopeRow
}

// scopeRow is a line of the scope table: who may hold the scope.
type scopeRow struct{ Name, Words, Clients string }

const exampleViewerQuery = "query { viewer { id email enrolledCourses(first: 10) { nodes { slug expireDate hasLifetimeAccess lastWatchedLecture { lectureId positionSeconds } } } } }"

// renderAuth writes /auth.md: the walkthrough with this site's real URLs.
func renderAuth(s Site) ([]byte, error) {
	memberScopes := strings.Join(s.ProtectedResourceScopes, " ")
	return render("auth.md", authView{
		page:           newPage(s),
		Endpoints:      listedEndpoints(s.Endpoints),
		MemberScopes:   memberScopes,
		AuthorizeQuery: exampleAuthorizeQuery(s.Issuer, memberScopes),
		ViewerQuery:    exampleViewerQuery,
		AdminAreas:     adminAreas(s.Scopes),
		Scopes:         scopeRows(s.Scopes),
	})
}

// exampleAuthorizeQuery is a member client's authorization request, with
// placeholders where the client fills in its own values.
func exampleAuthorizeQuery(issuer, scopes string) string {
	return url.Values{
		"response_type":         {"code"},
		"client_id":             {"CLIENT_ID"},
		"redirect_uri":          {"http://127.0.0.1:8765/callback"},
		"scope":                 {scopes},
		"resource":              {issuer},
		"code_challenge":        {"CODE_CHALLENGE"},
		"code_challenge_method": {"S256"},
		"state":                 {"STATE"},
		"nonce":                 {"NONCE"},
	}.Encode()
}

// scopeRows describes every scope once, in the table's order.
func scopeRows(scopes []string) []scopeRow {
	var out []scopeRow
	for _, sc := range dedupe(scopes) {
		who := policy.AudienceOperator
		switch {
		case !isOperatorScope(sc):
			who = policy.AudienceMember
		case sc == "openid" || sc == "profile" || sc == "email" || sc == policy.OfflineAccess:
			who = policy.AudienceMember + ", " + policy.AudienceOperator
		}
		out = append(out, scopeRow{Name: sc, Words: scopeDescription(sc), Clients: who})
	}
	return out
}
