package school

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/schoolgate/schoolgate/policy"
)

// AssertionHeader carries the signed identity assertion to the legacy
// server (docs/backend-contract.md). Like every X-School-* header it is
// stripped from what clients send.
const AssertionHeader = "X-School-Assertion"

// setAssertion adds the token's assertion to headers bound for the legacy
// server when the school has it on. The assertion is signed once per
// validated token and cached with it, so this costs a signature only on a
// validation-cache miss. An error means the request must not be sent: the
// legacy server would refuse it, so it fails closed here.
func (s *Site) setAssertion(h http.Header, tok *policy.Token) error {
	if s.assertionAudience == "" {
		return nil
	}
	if tok == nil {
		return errors.New("identity assertion: no validated token")
	}
	a, err := s.as.IdentityAssertion(tok, s.assertionAudience)
	if err != nil {
		return fmt.Errorf("identity assertion: %w", err)
	}
	h[AssertionHeader] = []string{a}
	return nil
}
