package caddymodule

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
)

// grantCommands are `caddy schoolgate grants` and `revoke-grant`: the
// connected applications of a school (grantsapi.go) from the command line.
func grantCommands() []*cobra.Command {
	// The list's query comes from its flags, which its path reads.
	var list *cobra.Command
	grants := adminCall{use: "grants", method: http.MethodGet,
		short: "List the applications people connected and how many each (or, with --client-id or --subject, the grants themselves)",
		path:  func(issuer string) string { return grantsQuery(list, issuer) },
		flags: func(c *cobra.Command) {
			c.Flags().String("client-id", "", "the people connected to this application")
			c.Flags().String("subject", "", "the applications this person (their sub) connected")
			c.Flags().String("after", "", `the page after this one: the "next" of the previous answer`)
			c.Flags().Int("limit", 0, "grants a page (default 50)")
		}}
	list = grants.command()
	revoke := adminCall{use: "revoke-grant <grant_id> --subject <sub>", method: http.MethodPost,
		short: "End one person's grant to an application (its tokens stop working; the application must ask again)",
		args:  cobra.ExactArgs(1), path: func(string) string { return "/schoolgate/grants/revoke" },
		body: func(cmd *cobra.Command, issuer string, args []string) (any, error) {
			subject, _ := cmd.Flags().GetString("subject")
			if subject == "" {
				return nil, fmt.Errorf("name the grant's person with --subject, as `caddy schoolgate grants` lists it")
			}
			return map[string]string{"issuer": issuer, "grant_id": args[0], "subject": subject}, nil
		},
		flags: func(c *cobra.Command) { c.Flags().String("subject", "", "the person whose grant it is (their sub)") }}
	return []*cobra.Command{list, revoke.command()}
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
