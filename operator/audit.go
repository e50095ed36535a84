package operator

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
)

// auditCommands are `caddy schoolgate audit` and `subject export|erase`:
// the audit trail and a person's data (package adminapi) from the command line.
func auditCommands(api AdminAPI) []*cobra.Command {
	var list *cobra.Command
	audit := adminCall{use: "audit", method: http.MethodGet,
		short: "List the school's audit events, newest first (filter by person, application, type, time)",
		path:  func(issuer string) string { return auditPath(list, issuer) },
		flags: func(c *cobra.Command) {
			c.Flags().String("subject", "", "events concerning this person (their sub), or done by them as operator")
			c.Flags().String("client-id", "", "events of this application")
			c.Flags().String("type", "", "events of this type (consent_granted, code_replay, ...)")
			c.Flags().String("since", "", "from this time on: RFC 3339, or a duration ago (24h)")
			c.Flags().String("until", "", "before this time: RFC 3339, or a duration ago")
			c.Flags().String("cursor", "", `the page after this one: the "next" of the previous answer`)
			c.Flags().Int("limit", 0, "events a page (default 100)")
		}}
	list = audit.command(api)
	subject := &cobra.Command{Use: "subject", Short: "Export or erase everything the school stores about one person"}
	// The path takes the person from the command's argument.
	var exportCmd *cobra.Command
	export := adminCall{use: "export <sub>", method: http.MethodGet, args: cobra.ExactArgs(1),
		short: "Print, as JSON, everything the school stores about the person (consents, grants, audit events)",
		path: func(issuer string) string {
			return "/schoolgate/subject?" + url.Values{"issuer": {issuer}, "subject": exportCmd.Flags().Args()}.Encode()
		}}
	exportCmd = export.command(api)
	erase := adminCall{use: "erase <sub>", method: http.MethodPost, args: cobra.ExactArgs(1),
		short: "Delete everything the school stores about the person; their applications' tokens stop working",
		path:  func(string) string { return "/schoolgate/subject/erase" },
		body: func(_ *cobra.Command, issuer string, args []string) (any, error) {
			return map[string]string{"issuer": issuer, "subject": args[0]}, nil
		}}
	subject.AddCommand(exportCmd, erase.command(api))
	return []*cobra.Command{list, subject}
}

// auditPath is the path of an audit listing with the command's flags.
func auditPath(cmd *cobra.Command, issuer string) string {
	q := url.Values{"issuer": {issuer}}
	for flag, param := range map[string]string{"subject": "subject", "client-id": "client_id", "type": "type",
		"since": "since", "until": "until", "cursor": "cursor"} {
		if v, _ := cmd.Flags().GetString(flag); v != "" {
			q.Set(param, v)
		}
	}
	if n, _ := cmd.Flags().GetInt("limit"); n > 0 {
		q.Set("limit", strconv.Itoa(n))
	}
	return "/schoolgate/audit?" + q.Encode()
}
