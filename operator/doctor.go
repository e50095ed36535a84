package operator

import (
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
)

// doctorCommand is `caddy schoolgate doctor --issuer … <client_id>`: the
// connection doctor (caddymodule/doctorapi.go) from the command line.
func doctorCommand(api AdminAPI) *cobra.Command {
	var cmd *cobra.Command
	call := adminCall{use: "doctor <client_id>", method: http.MethodGet, args: cobra.ExactArgs(1),
		short: "Show the steps of an application's recent attempts to connect, and why the latest stopped",
		path: func(issuer string) string {
			q := url.Values{"issuer": {issuer}, "client_id": cmd.Flags().Args()}
			if lang, _ := cmd.Flags().GetString("lang"); lang != "" {
				q.Set("lang", lang)
			}
			return "/schoolgate/doctor?" + q.Encode()
		},
		flags: func(c *cobra.Command) {
			c.Flags().String("lang", "", "the language of the reasons (en, de, fr, es, it, pt; default en)")
		}}
	cmd = call.command(api)
	return cmd
}
