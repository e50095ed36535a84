package pages

import (
	"strings"

	"github.com/schoolgate/schoolgate/policy"
)

// An application's row on the person's page says in one line what it can
// do, from the most far-reaching of its scopes; the full list, each
// scope's meaning first and its code after, is a click away. One whole
// message per kind of reach, rather than a sentence assembled from parts,
// reads right in every language.

// scopeSummary is the key of the message summing up what scopes let an
// application do: the school's data changed, or read; the person's own
// account data changed, or read; who they are; signing them in. A grant
// of scopes none of these cover is summed up by its first scope's words.
func scopeSummary(scopes []string) string {
	var schoolRead, schoolWrite, schoolReadWrite, accountRead, accountWrite, identity, signIn bool
	for _, sc := range scopes {
		area, access, _ := strings.Cut(sc, ":")
		switch {
		case sc == "account:write":
			accountWrite = true
		case sc == "account:read":
			accountRead = true
		case sc == "profile" || sc == "email":
			identity = true
		case sc == "openid":
			signIn = true
		case area == "account":
		case access == "write" && policy.WriteIncludesRead(sc):
			schoolReadWrite = true
		case access == "write":
			schoolWrite = true
		case access == "read":
			schoolRead = true
		}
	}
	switch {
	case schoolReadWrite || (schoolWrite && schoolRead):
		return "summary.school_readwrite"
	case schoolWrite:
		return "summary.school_write"
	case schoolRead:
		return "summary.school_read"
	case accountWrite:
		return "summary.account_write"
	case accountRead:
		return "summary.account_read"
	case identity:
		return "summary.identity"
	case signIn:
		return "summary.sign_in"
	case len(scopes) == 0:
		return "summary.none"
	}
	return ""
}

// scopeSummaryWords is scopeSummary's message in lang.
func scopeSummaryWords(lang string, scopes []string) string {
	if key := scopeSummary(scopes); key != "" {
		return msg(lang, key)
	}
	return scopeWords(lang, scopes[0])
}
