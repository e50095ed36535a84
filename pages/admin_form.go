package pages

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/schoolgate/schoolgate/authserver"
)

// Reading what an operator typed into the admin area's forms: every
// message returned is shown above the form.

// Limits of the admin forms.
const (
	maxAdminFormBytes = 32 << 10
	maxFormNonceLen   = 64
)

// formNonce names one rendering of the creation form, so that a
// resubmission of it is recognised: 32 random bytes, base64url.
func formNonce() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // the platform is broken
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

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

// parseAppForm reads the application form into a spec and validates it;
// the error is shown to the operator above the form.
func parseAppForm(form url.Values, withType bool) (authserver.AppSpec, *authserver.InputError) {
	spec := authserver.AppSpec{Name: form.Get("name"), Scopes: form["scope"], DPoPBound: form.Get("dpop_bound") == "on"}
	for line := range strings.Lines(form.Get("redirect_uris")) {
		spec.RedirectURIs = append(spec.RedirectURIs, line)
	}
	if ie := spec.Normalize(); ie != nil {
		return spec, ie
	}
	if withType {
		switch form.Get("client_type") {
		case "public":
		case "confidential":
			spec.Confidential = true
		default:
			return spec, authserver.NewInputError("admin.invalid.choose_type")
		}
	}
	return spec, nil
}
