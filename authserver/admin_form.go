package authserver

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
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
		a.fail(http.StatusRequestEntityTooLarge, "admin.error.form_too_large")
	default:
		a.fail(http.StatusBadRequest, "error.form_unreadable")
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
// the error is shown to the operator above the form.
func parseAppForm(form url.Values, withType bool) (AppSpec, *InputError) {
	spec := AppSpec{Name: form.Get("name"), Scopes: form["scope"], DPoPBound: form.Get("dpop_bound") == "on"}
	for line := range strings.Lines(form.Get("redirect_uris")) {
		spec.RedirectURIs = append(spec.RedirectURIs, line)
	}
	if ie := spec.normalize(); ie != nil {
		return spec, ie
	}
	if withType {
		switch form.Get("client_type") {
		case "public":
		case "confidential":
			spec.Confidential = true
		default:
			return spec, inputError("admin.invalid.choose_type")
		}
	}
	return spec, nil
}

// checkAppRedirect accepts an absolute https URL, or an http URL on a
// loopback address (RFC 8252 §7.3), without fragment or credentials.
func checkAppRedirect(raw string) *InputError {
	if len(raw) > maxAppRedirectLen {
		return inputError("admin.invalid.redirect_long", "n", maxAppRedirectLen)
	}
	uri := strconv.Quote(raw)
	if strings.IndexFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 ||
		!utf8.ValidString(raw) {
		return inputError("admin.invalid.redirect_space", "uri", uri)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return inputError("admin.invalid.redirect_relative", "uri", uri)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return inputError("admin.invalid.redirect_fragment", "uri", uri)
	case u.User != nil:
		return inputError("admin.invalid.redirect_user", "uri", uri)
	case u.Scheme == "https":
		return nil
	case isLoopbackRedirect(u):
		return nil
	}
	return inputError("admin.invalid.redirect_https", "uri", uri)
}

// parseMemberScopes checks chosen scopes against memberAppScopes and
// returns them in the scope table's order.
func parseMemberScopes(chosen []string) ([]string, *InputError) {
	allowed := memberAppScopes()
	for _, sc := range chosen {
		if sc == policy.OfflineAccess {
			return nil, inputError("admin.invalid.offline")
		}
		if !slices.Contains(allowed, sc) {
			if len(sc) > 64 {
				sc = sc[:64] + "…"
			}
			return nil, inputError("admin.invalid.scope", "scope", strconv.Quote(sc),
				"allowed", strings.Join(allowed, ", "))
		}
	}
	var out []string
	for _, sc := range allowed {
		if slices.Contains(chosen, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, inputError("admin.invalid.scope_none")
	}
	return out, nil
}
