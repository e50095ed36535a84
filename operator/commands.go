package operator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// adminCall is one subcommand: a method and path, and a body built from
// the flags (nil for a GET).
type adminCall struct {
	use, short string
	args       cobra.PositionalArgs
	method     string
	path       func(issuer string) string
	body       func(cmd *cobra.Command, issuer string, args []string) (any, error)
	flags      func(cmd *cobra.Command)

	// aliases are the command's old names, still answering.
	aliases []string
}

// Commands are `caddy schoolgate …` but `schools` (the registry's,
// which the adapter adds): the admin API's operations from the command
// line against a running server, reached through api, and the store
// commands, which work on a database with no server running.
func Commands(api AdminAPI) []*cobra.Command {
	withIssuer := func(issuer string) string { return "?issuer=" + url.QueryEscape(issuer) }
	issuerBody := func(_ *cobra.Command, issuer string, _ []string) (any, error) {
		return map[string]string{"issuer": issuer}, nil
	}
	calls := []adminCall{
		{use: "running", aliases: []string{"sites"}, short: "List the schools this Caddy runs now, their state, keys and catalog (old name: sites)",
			method: http.MethodGet, path: func(string) string { return "/schoolgate/running" }},
		{use: "health", short: "Check the site blocks' schools and the platforms' registries, or with --issuer one school (exit 1 when unhealthy)",
			method: http.MethodGet, path: func(issuer string) string {
				if issuer == "" {
					return "/schoolgate/health"
				}
				return "/schoolgate/health" + withIssuer(issuer)
			}},
		{use: "rotate-keys", short: "Publish a new signing key (it signs an hour later)", method: http.MethodPost,
			path: func(string) string { return "/schoolgate/keys/rotate" }, body: issuerBody},
		{use: "refresh-catalog", short: "Import the catalog feed now", method: http.MethodPost,
			path: func(string) string { return "/schoolgate/catalog/refresh" }, body: issuerBody},
		{use: "mcp-connections [on|off]", short: "Show, or switch, the beta feature MCP connections",
			args: cobra.MaximumNArgs(1), method: http.MethodGet,
			path: func(issuer string) string { return "/schoolgate/mcp-connections" + withIssuer(issuer) },
			body: func(_ *cobra.Command, issuer string, args []string) (any, error) {
				if len(args) == 0 {
					return nil, nil
				}
				if args[0] != "on" && args[0] != "off" {
					return nil, fmt.Errorf("say on or off, not %q", args[0])
				}
				return map[string]any{"issuer": issuer, "enabled": args[0] == "on"}, nil
			}},
		{use: "backup <issuer> <file> | --all <dir>", short: "Copy a school's store (or every school's) while it serves",
			args: cobra.RangeArgs(1, 2), method: http.MethodPost, path: func(string) string { return "/schoolgate/backup" },
			body: func(cmd *cobra.Command, _ string, args []string) (any, error) {
				if all, _ := cmd.Flags().GetBool("all"); all {
					if len(args) != 1 {
						return nil, fmt.Errorf("backup --all <dir>")
					}
					dir, err := filepath.Abs(args[0])
					return map[string]any{"all": true, "dir": dir}, err
				}
				if len(args) != 2 {
					return nil, fmt.Errorf("backup <issuer> <file>")
				}
				file, err := filepath.Abs(args[1])
				return map[string]any{"issuer": args[0], "file": file}, err
			},
			flags: func(c *cobra.Command) { c.Flags().Bool("all", false, "every school, one file each in the directory") }},
		{use: "usage", short: "Show a school's usage: requests, tokens issued, refusals by cause, p50/p99 of the last 5 minutes, hour and day, last active",
			method: http.MethodGet, path: func(issuer string) string { return "/schoolgate/usage" + withIssuer(issuer) }},
		{use: "clients", short: "List the school's stored clients", method: http.MethodGet,
			path: func(issuer string) string { return "/schoolgate/clients" + withIssuer(issuer) }},
		{use: "create-client", short: "Create a member application (needs MCP connections on)", method: http.MethodPost,
			path: func(string) string { return "/schoolgate/clients" }, body: createClientBody,
			flags: func(c *cobra.Command) {
				c.Flags().String("name", "", "the application's name, shown on the consent page")
				c.Flags().StringArray("redirect-uri", nil, "a redirect URI (repeat for more)")
				c.Flags().StringArray("scope", nil, "a scope it may request (repeat for more)")
				c.Flags().Bool("confidential", false, "a confidential client (client_secret_post); the secret is printed once")
				c.Flags().String("idempotency-key", "", "repeating a creation with the same key returns the first application")
			}},
		{use: "delete-client <client_id>", short: "Delete a member application or loopback client and revoke its tokens",
			args: cobra.ExactArgs(1), method: http.MethodPost, path: func(string) string { return "/schoolgate/clients/delete" },
			body: func(_ *cobra.Command, issuer string, args []string) (any, error) {
				return map[string]string{"issuer": issuer, "client_id": args[0]}, nil
			}},
		{use: "review-client <client_id>", short: "Set a metadata-document client's scopes and reviewed status",
			args: cobra.ExactArgs(1), method: http.MethodPost, path: func(string) string { return "/schoolgate/clients/review" },
			body: reviewClientBody,
			flags: func(c *cobra.Command) {
				c.Flags().StringArray("scope", nil, "a scope it may get (repeat for more)")
				c.Flags().Bool("reviewed", true, "reviewed (false: read and identity scopes only)")
			}},
	}
	var cmds []*cobra.Command
	for _, call := range calls {
		cmds = append(cmds, call.command(api))
	}
	cmds = append(cmds, grantCommands(api)...)
	cmds = append(cmds, auditCommands(api)...)
	cmds = append(cmds, doctorCommand(api))
	return append(cmds, storeCommands()...)
}

func (a adminCall) command(api AdminAPI) *cobra.Command {
	c := &cobra.Command{Use: a.use, Aliases: a.aliases, Short: a.short, Args: a.args}
	if c.Args == nil {
		c.Args = cobra.NoArgs
	}
	c.Flags().String("address", "", "the admin API address of the running Caddy")
	c.Flags().StringP("config", "c", "", "a config file to read the admin address from")
	c.Flags().StringP("adapter", "a", "", "the adapter of --config")
	c.Flags().String("issuer", "", "the school, by its origin (e.g. https://school.example)")
	if a.flags != nil {
		a.flags(c)
	}
	c.RunE = func(cmd *cobra.Command, args []string) error { return a.run(api, cmd, args) }
	return c
}

func (a adminCall) run(api AdminAPI, cmd *cobra.Command, args []string) error {
	fl := cmd.Flags()
	address, _ := fl.GetString("address")
	config, _ := fl.GetString("config")
	adapter, _ := fl.GetString("adapter")
	issuer, _ := fl.GetString("issuer")
	method, path := a.method, a.path(issuer)
	var body io.Reader
	if a.body != nil {
		v, err := a.body(cmd, issuer, args)
		if err != nil {
			return err
		}
		if v != nil {
			raw, err := json.Marshal(v)
			if err != nil {
				return err
			}
			method, body = http.MethodPost, bytes.NewReader(raw)
			if a.method == http.MethodGet {
				path, _, _ = strings.Cut(path, "?") // the issuer goes in the body
			}
		}
	}
	adminAddr, err := api.Address(address, config, adapter)
	if err != nil {
		return fmt.Errorf("finding the admin API: %v", err)
	}
	resp, err := api.Do(adminAddr, method, path, nil, body)
	var refused *AdminError
	if errors.As(err, &refused) && refused.Answer != nil {
		// An answer without a message (the health check's report with
		// its 503) is what the operator asked for: it is printed, and
		// the command exits 1.
		_, _ = os.Stdout.Write(refused.Answer)
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(os.Stdout, resp.Body)
	return err
}

func createClientBody(cmd *cobra.Command, issuer string, _ []string) (any, error) {
	fl := cmd.Flags()
	name, _ := fl.GetString("name")
	uris, _ := fl.GetStringArray("redirect-uri")
	scopes, _ := fl.GetStringArray("scope")
	confidential, _ := fl.GetBool("confidential")
	key, _ := fl.GetString("idempotency-key")
	return map[string]any{"issuer": issuer, "client_name": name, "redirect_uris": uris, "scopes": scopes,
		"confidential": confidential, "idempotency_key": key}, nil
}

func reviewClientBody(cmd *cobra.Command, issuer string, args []string) (any, error) {
	scopes, _ := cmd.Flags().GetStringArray("scope")
	reviewed, _ := cmd.Flags().GetBool("reviewed")
	return map[string]any{"issuer": issuer, "client_id": args[0], "scopes": scopes, "reviewed": reviewed}, nil
}
