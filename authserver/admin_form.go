package authserver

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/schoolgate/schoolgate/policy"
)

// Reading what an operator typed into the admin area's forms: every
// message returned is shown above the form.

// Limits of the admin forms.
const (
	maxAdminFormBytes  = 32 << 10
	maxAppNameLen      = 200
	maxAppRedirectURIs = 20
	maxAppRedirectLen  = 2048
	maxClientIDLen     = 2048
	maxFormNonceLen    = 64
)

// readForm reads a POSTed form, bounded in size; a form that cannot be
// read is answered here.
func (a *adminCtx) readForm() bool {
	a.r.Body = http.MaxBytesReader(a.w, a.r.Body, maxAdminFormBytes)
	err := a.r.ParseForm()
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &tooBig):
		a.fail(http.StatusRequestEntityTooLarge, "The form is too large.")
	default:
		a.fail(http.StatusBadRequest, "The form could not be read.")
	}
	return false
}

// memberAppScopeNames are the scopes a client acting for a member may be
// given: identity and the member's own account.
var memberAppScopeNames = []string{"openid", "profile", "email", "account:read", "account:write"}

// memberAppScopes is policy.AllScopes, in the table's order, limited to
// memberAppScopeNames: what an operator may choose for a member
// application or a reviewed metadata-document client.
func memberAppScopes() []string {
	var out []string
	for _, s := range policy.AllScopes {
		if slices.Contains(memberAppScopeNames, s) {
			out = append(out, s)
		}
	}
	return out
}

// parseAppForm reads the application form into a spec and validates it;
// the message is shown to the operator above the form.
func parseAppForm(form url.Values, withType bool) (AppSpec, string) {
	spec := AppSpec{Name: form.Get("name"), Scopes: form["scope"]}
	for line := range strings.Lines(form.Get("redirect_uris")) {
		spec.RedirectURIs = append(spec.RedirectURIs, line)
	}
	if msg := spec.normalize(); msg != "" {
		return spec, msg
	}
	if withType {
		switch form.Get("client_type") {
		case "public":
		case "confidential":
			spec.Confidential = true
		default:
			return spec, "Choose whether the application is public or confidential."
		}
	}
	return spec, ""
}

// checkAppRedirect accepts an absolute https URL, or an http URL on a
// loopback address (RFC 8252 §7.3), without fragment or credentials.
func checkAppRedirect(raw string) string {
	if len(raw) > maxAppRedirectLen {
		return fmt.Sprintf("A redirect URI must be at most %d characters long.", maxAppRedirectLen)
	}
	if strings.IndexFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 ||
		!utf8.ValidString(raw) {
		return fmt.Sprintf("Redirect URI %q must not contain spaces or control characters.", raw)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return fmt.Sprintf("Redirect URI %q is not an absolute URL such as https://app.example/callback.", raw)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Sprintf("Redirect URI %q must not have a fragment (#...).", raw)
	case u.User != nil:
		return fmt.Sprintf("Redirect URI %q must not contain a user name or password.", raw)
	case u.Scheme == "https":
		return ""
	case isLoopbackRedirect(u):
		return ""
	}
	return fmt.Sprintf("Redirect URI %q must use https; plain http is allowed only on a loopback address such as http://127.0.0.1:8080/callback.", raw)
}

// parseMemberScopes checks chosen scopes against memberAppScopes and
// returns them in the scope table's order.
func parseMemberScopes(chosen []string) ([]string, string) {
	allowed := memberAppScopes()
	for _, sc := range chosen {
		if sc == policy.OfflineAccess {
			return nil, "offline_access is not among the scopes to choose: every application may ask for it."
		}
		if !slices.Contains(allowed, sc) {
			if len(sc) > 64 {
				sc = sc[:64] + "…"
			}
			return nil, fmt.Sprintf("Scope %q cannot be given to a member application; choose among %s.",
				sc, strings.Join(allowed, ", "))
		}
	}
	var out []string
	for _, sc := range allowed {
		if slices.Contains(chosen, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, "Choose at least one scope."
	}
	return out, ""
}
