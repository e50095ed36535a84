package operator

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
)

// grantCommands are `caddy schoolgate grants` and `revoke-grant`: the
// connected applications of a school (package adminapi) from the command line.
func grantCommands(api AdminAPI) []*cobra.Command {
	// The list's query comes from its flags, which its path reads.
	var list *cobra.Command
	grants := adminCall{use: "grants", method: http.MethodGet,
		short: "List the applications people connected and how many people each (or, with --client-id or --subject, the grants themselves)",
		path:  func(issuer string) string { return grantsQuery(list, issuer) },
		flags: func(c *cobra.Command) {
			c.Flags().String("client-id", "", "the grants of the people connected to this application, person by person")
			c.Flags().String("subject", "", "the grants this person (their sub) gave, application by application")
			c.Flags().String("after", "", `the page after this one: the "next" of the previous answer`)
			c.Flags().Int("limit", 0, "grants a page (default 50)")
		}}
	list = grants.command(api)
	revoke := adminCall{use: "revoke-grant [<grant_id>] --subject <sub> [--client-id <id>]", method: http.MethodPost,
		short: "End one person's grant (<grant_id>), or everything an application holds for them (--client-id): " +
			"the tokens stop working and the application must ask again",
		args: cobra.MaximumNArgs(1), path: func(string) string { return "/schoolgate/grants/revoke" },
		body: revokeBody,
		flags: func(c *cobra.Command) {
			c.Flags().String("subject", "", "the person whose grant or application it is (their sub)")
			c.Flags().String("client-id", "", "end every grant this application holds for the person, instead of one")
		}}
	return []*cobra.Command{list, revoke.command(api)}
}

// revokeBody names one grant (the argument) or an application
// (--client-id), never both, and the person.
func revokeBody(cmd *cobra.Command, issuer string, args []string) (any, error) {
	subject, _ := cmd.Flags().GetString("subject")
	clientID, _ := cmd.Flags().GetString("client-id")
	switch {
	case len(args) == 1 && clientID != "":
		return nil, fmt.Errorf("name either one grant (<grant_id>) or the application (--client-id), not both")
	case len(args) == 0 && clientID == "":
		return nil, fmt.Errorf("name one grant (<grant_id>) or the application whose every grant for the person ends (--client-id)")
	case subject == "":
		return nil, fmt.Errorf("name the person with --subject, as `caddy schoolgate grants` lists them")
	}
	if clientID != "" {
		return map[string]string{"issuer": issuer, "client_id": clientID, "subject": subject}, nil
	}
	return map[string]string{"issuer": issuer, "grant_id": args[0], "subject": subject}, nil
}

// grantsQuery is the path of a grants listing with the command's flags.
func grantsQuery(cmd *cobra.Command, issuer string) string {
	q := url.Values{"issuer": {issuer}}
	for flag, param := range map[string]string{"client-id": "client_id", "subject": "subject", "after": "after"} {
		if v, _ := cmd.Flags().GetString(flag); v != "" {
			q.Set(param, v)
		}
	}
	if n, _ := cmd.Flags().GetInt("limit"); n > 0 {
		q.Set("limit", strconv.Itoa(n))
	}
	return "/schoolgate/grants?" + q.Encode()
}
