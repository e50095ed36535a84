package caddymodule

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/schoolgate/schoolgate/operator"
)

// `caddy schoolgate …`: the admin API's operations (package operator)
// from the command line, against a running Caddy, the way `caddy reload`
// reaches it.
func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "schoolgate",
		Usage: "<subcommand> [--address <admin address>] [--issuer <school origin>] ...",
		Short: "Operates the schools of a running Caddy (clients, MCP connections, keys, catalog)",
		Long: `
Talks to the schoolgate routes of a running Caddy's admin API. The admin
address is --address, else the one of --config (and --adapter), else
Caddy's default (localhost:2019). Answers are printed as JSON; a refusal
is printed as its message, and the command exits 1.

Two words name a school: "running" lists what this Caddy serves now (site
blocks' schools and platforms' schools, with their state, keys and
catalog); "schools" writes and reads a school_platform's registry, whose
records are the schools it serves. "sites" is running's old name.`,
		CobraFunc: schoolgateCommands,
	})
}

// caddyAdmin reaches a running Caddy's admin API as `caddy reload` does.
var caddyAdmin = operator.AdminAPI{
	Address: func(address, config, adapter string) (string, error) {
		return caddycmd.DetermineAdminAPIAddress(address, nil, config, adapter)
	},
	Request: caddycmd.AdminAPIRequest,
}

func schoolgateCommands(root *cobra.Command) {
	root.AddCommand(operator.Commands(caddyAdmin)...)
	root.AddCommand(schoolsCommand())
}

// schoolsCommand is `caddy schoolgate schools …` (package operator's),
// with import, which reads a Caddyfile's site blocks (schoolsimport.go).
func schoolsCommand() *cobra.Command {
	c := operator.SchoolsCommand(caddyAdmin)
	c.AddCommand(importCommand())
	return c
}

// What the import uses of the operator's commands.
var orEnv = operator.OrEnv

const (
	envDatabaseURL = operator.EnvDatabaseURL
	envKeySecret   = operator.EnvKeySecret
	commandTimeout = operator.CommandTimeout
)
