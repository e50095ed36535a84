package caddymodule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
)

// schoolsCommand is `caddy schoolgate schools …`: a platform's schools
// written and read through the running Caddy's admin API
// (/schoolgate/schools, schoolsapi.go), and import, which writes a
// registry directly (schoolsimport.go).
func schoolsCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "schools",
		Short: "Add, change, remove and list the schools of a school_platform",
		Long: `
Writes the registry of the running Caddy's school_platform through its admin
API; the change is served without a reload. The admin address is --address,
else the one of --caddy-config (and --adapter), else Caddy's default
(localhost:2019). With several platforms in the config, --platform names one
("dir <path>" or "postgres", as caddy schoolgate schools list shows).`,
	}
	add := &cobra.Command{
		Use:   "add <issuer> --upstream <url> [--host <alias>]... [--config <file.json>]",
		Short: "Add a school (refused if the registry has it)",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return writeSchool(cmd, args[0], false) },
	}
	recordFlags(add)
	add.Flags().Bool("disable", false, "add it disabled: its record only, answering 404")
	set := &cobra.Command{
		Use:   "set <issuer> [--upstream <url>] [--host <alias>]... [--no-hosts] [--config <file.json>] [--disable|--enable]",
		Short: "Change a school: what the flags name is replaced, the rest kept",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return writeSchool(cmd, args[0], true) },
	}
	recordFlags(set)
	set.Flags().Bool("no-hosts", false, "remove every alias")
	set.Flags().Bool("disable", false, "keep the record and the data, answer 404")
	set.Flags().Bool("enable", false, "serve it again")
	remove := &cobra.Command{
		Use:   "remove <issuer>",
		Short: "Remove a school from the registry (its data is kept)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			platform, _ := cmd.Flags().GetString("platform")
			raw, err := schoolsRequest(cmd, http.MethodPost, "/schoolgate/schools/remove",
				map[string]any{"issuer": args[0], "platform": platform})
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(raw)
			return err
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the schools with their state (a table)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := ""
			if platform, _ := cmd.Flags().GetString("platform"); platform != "" {
				q = "?platform=" + url.QueryEscape(platform)
			}
			raw, err := schoolsRequest(cmd, http.MethodGet, "/schoolgate/schools"+q, nil)
			if err != nil {
				return err
			}
			return printSchools(cmd.OutOrStdout(), raw)
		},
	}
	show := &cobra.Command{
		Use:   "show <issuer>",
		Short: "Show a school's record and state (JSON)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := showRequest(cmd, args[0])
			if err != nil {
				return err
			}
			var out bytes.Buffer
			if json.Indent(&out, raw, "", "  ") != nil {
				out.Reset()
				out.Write(raw)
			}
			_, err = out.WriteTo(cmd.OutOrStdout())
			return err
		},
	}
	for _, c := range []*cobra.Command{add, set, remove, list, show} {
		c.Flags().String("address", "", "the admin API address of the running Caddy")
		c.Flags().String("caddy-config", "", "a Caddy config file to read the admin address from")
		c.Flags().StringP("adapter", "a", "", "the adapter of --caddy-config")
		c.Flags().String("platform", "", `the platform, when the config has several: "dir <path>" or "postgres"`)
		root.AddCommand(c)
	}
	root.AddCommand(importCommand())
	return root
}

// recordFlags are the flags that make a record, add's and set's.
func recordFlags(c *cobra.Command) {
	c.Flags().String("upstream", "", "the legacy server (the school_gateway upstream); it wins over the config file's")
	c.Flags().StringArray("host", nil, "a further host name the school answers on (repeat for more)")
	c.Flags().String("config", "", "a JSON file of the school_gateway options")
}

// writeSchool adds a school, or (change) changes the one the registry
// has, conditionally on the version read, so that a write made meanwhile
// by another operator is not overwritten.
func writeSchool(cmd *cobra.Command, issuer string, change bool) error {
	fl := cmd.Flags()
	platform, _ := fl.GetString("platform")
	body := map[string]any{"issuer": issuer, "platform": platform}
	var current struct {
		Hosts    []string        `json:"hosts"`
		Disabled bool            `json:"disabled"`
		Config   json.RawMessage `json:"config"`
		Version  int64           `json:"version"`
	}
	if change {
		raw, err := showRequest(cmd, issuer)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &current); err != nil {
			return fmt.Errorf("reading the school's record: %v", err)
		}
		// A file written by hand, never written through a registry, has
		// version 0, which a condition cannot name.
		if current.Version > 0 {
			body["if_version"] = current.Version
		}
	} else {
		body["if_version"] = 0
	}
	cfg, err := schoolConfig(cmd, current.Config)
	if err != nil {
		return err
	}
	body["config"] = cfg
	hosts, _ := fl.GetStringArray("host")
	if noHosts, _ := fl.GetBool("no-hosts"); noHosts && len(hosts) > 0 {
		return errors.New("--no-hosts and --host: say one")
	} else if !noHosts && !fl.Changed("host") {
		hosts = current.Hosts
	}
	body["hosts"] = hosts
	disable, _ := fl.GetBool("disable")
	enable, _ := fl.GetBool("enable")
	switch {
	case disable && enable:
		return errors.New("--disable and --enable: say one")
	case disable:
		body["disabled"] = true
	case !enable:
		body["disabled"] = current.Disabled
	}
	raw, err := schoolsRequest(cmd, http.MethodPost, "/schoolgate/schools", body)
	if err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write(raw)
	return err
}

// schoolConfig is the school_gateway options of --config (else current),
// with --upstream set over them.
func schoolConfig(cmd *cobra.Command, current json.RawMessage) (map[string]json.RawMessage, error) {
	cfg := map[string]json.RawMessage{}
	file, _ := cmd.Flags().GetString("config")
	switch {
	case file != "":
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--config: %v", err)
		}
		if err := json.Unmarshal(raw, &cfg); err != nil || cfg == nil {
			return nil, fmt.Errorf("--config: %s is not a JSON object of the school_gateway options", file)
		}
	case len(current) > 0:
		if err := json.Unmarshal(current, &cfg); err != nil || cfg == nil {
			cfg = map[string]json.RawMessage{}
		}
	}
	if upstream, _ := cmd.Flags().GetString("upstream"); upstream != "" {
		cfg["upstream"], _ = json.Marshal(upstream)
	}
	if _, ok := cfg["upstream"]; !ok {
		return nil, errors.New("--upstream is required (or a --config file that sets upstream)")
	}
	return cfg, nil
}

// showRequest reads one school's record from the admin API.
func showRequest(cmd *cobra.Command, issuer string) ([]byte, error) {
	q := url.Values{"issuer": {issuer}}
	if platform, _ := cmd.Flags().GetString("platform"); platform != "" {
		q.Set("platform", platform)
	}
	return schoolsRequest(cmd, http.MethodGet, "/schoolgate/schools?"+q.Encode(), nil)
}

// schoolsRequest makes one admin API request and returns its answer; an
// error status is an error carrying the answer, as for the other
// commands.
func schoolsRequest(cmd *cobra.Command, method, path string, body any) ([]byte, error) {
	fl := cmd.Flags()
	address, _ := fl.GetString("address")
	config, _ := fl.GetString("caddy-config")
	adapter, _ := fl.GetString("adapter")
	var reader io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		reader = bytes.NewReader(raw)
	}
	adminAddr, err := caddycmd.DetermineAdminAPIAddress(address, nil, config, adapter)
	if err != nil {
		return nil, fmt.Errorf("finding the admin API: %v", err)
	}
	var header http.Header
	if body != nil {
		header = http.Header{"Content-Type": {"application/json"}}
	}
	resp, err := caddycmd.AdminAPIRequest(adminAddr, method, path, header, reader)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// printSchools writes the listing as a table.
func printSchools(out io.Writer, raw []byte) error {
	var list []schoolView
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("reading the listing: %v", err)
	}
	platforms := map[string]bool{}
	for _, s := range list {
		platforms[s.Platform] = true
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	header := "ISSUER\tSTATE\tVERSION\tUPDATED\tHOSTS"
	if len(platforms) > 1 {
		header += "\tPLATFORM"
	}
	fmt.Fprintln(tw, header)
	for _, s := range list {
		state := s.State
		if s.Reason != "" {
			state += ": " + s.Reason
		}
		hosts := strings.Join(s.Hosts, ",")
		if hosts == "" {
			hosts = "-"
		}
		line := fmt.Sprintf("%s\t%s\t%d\t%s\t%s", s.Issuer, state, s.Version, s.UpdatedAt.UTC().Format(time.RFC3339), hosts)
		if len(platforms) > 1 {
			line += "\t" + s.Platform
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}
