package adminapi

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/i18n"
)

// doctorParams are the parameters GET /schoolgate/doctor takes.
var doctorParams = []string{"issuer", "client_id", "lang"}

// ParseDoctorQuery reads the query of GET /schoolgate/doctor (the
// adapter finds the school, built or read from its store), refusing
// anything it would not use.
func ParseDoctorQuery(q url.Values) (clientID, lang string, err error) {
	if err := OnlyParams(q, "the doctor", doctorParams...); err != nil {
		return "", "", err
	}
	clientID, lang = q.Get("client_id"), q.Get("lang")
	switch {
	case clientID == "":
		return "", "", fmt.Errorf("name the application: client_id=<its client_id>")
	case len(clientID) > authserver.MaxClientIDLen:
		return "", "", fmt.Errorf("client_id is longer than %d bytes: no application has it", authserver.MaxClientIDLen)
	case lang == "":
		lang = "en"
	case !i18n.IsLanguage(lang):
		return "", "", fmt.Errorf("lang %q is not one of %s", lang, strings.Join(i18n.Languages, ", "))
	}
	return clientID, lang, nil
}
