package operator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schoolgate/schoolgate/adminapi"
)

// SchoolsCommand is `caddy schoolgate schools …`: a platform's schools
// written and read through the running server's admin API
// (/schoolgate/schools, package adminapi's Schools), reached through
// api. The adapter adds import, which writes a registry directly.
func SchoolsCommand(api AdminAPI) *cobra.Command {
	root := &cobra.Command{
		Use:   "schools",
		Short: "Add, change, remove and list the schools of a school_platform's registry",
		Long: `
Writes the registry of the running Caddy's school_platform through its admin
API; the change is served without a reload. A school here is its registry's
record (what caddy schoolgate running lists is what this Caddy serves now). The admin address is --address,
else the one of --caddy-config (and --adapter), else Caddy's default
(localhost:2019). With several platforms in the config, --platform names one
("dir <path>" or "postgres", as caddy schoolgate schools list shows).`,
	}
	add := &cobra.Command{
		Use:   "add <issuer> --upstream <url> [--host <alias>]... [--config <file.json>] [--option <name>=<value>]... [--disable]",
		Short: "Add a school to the registry (refused if it has it: change it with set)",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return addSchool(api, cmd, args[0]) },
	}
	recordFlags(add, "a JSON file of the school_gateway options")
	add.Flags().Bool("disable", false, "add it disabled: its record only, answering 404")
	set := &cobra.Command{
		Use: "set <issuer> [--option <name>=<value>]... [--unset <name>]... [--config <patch.json>] [--upstream <url>] " +
			"[--host <alias>]... [--no-hosts] [--disable|--enable]",
		Short: "Change what the flags name in a school's record, and nothing else",
		Long: `
Reads the school's record, changes what the flags name and keeps the rest,
and writes it on condition of the version it read; a change another writer
made meanwhile is read again and this change made on it (three tries).

The options: --option name=value sets one school_gateway option (its JSON
name; a.b for b inside the object a). The value is JSON when it reads as
JSON (30, true, {"events":5}, "quoted"), else the string as written (30s,
http://10.0.0.5:9080). --unset name removes one. --config file.json is a
JSON merge patch (RFC 7396) of the options: each option it names is set,
merged into an object option, or removed where it is null; the others are
kept. They apply in the order: --config, --option and --unset, --upstream.
--host replaces the aliases, --no-hosts removes them.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return setSchool(api, cmd, args[0]) },
	}
	recordFlags(set, "a JSON merge patch (RFC 7396) of the school_gateway options: those it names are set, null removes one")
	set.Flags().StringArray("unset", nil, "remove one school_gateway option, by its name (a.b inside an object; repeat for more)")
	set.Flags().Bool("no-hosts", false, "remove every alias")
	set.Flags().Bool("disable", false, "keep the record and the data, answer 404")
	set.Flags().Bool("enable", false, "serve it again")
	remove := &cobra.Command{
		Use:   "remove <issuer>",
		Short: "Remove a school from the registry (its data is kept)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			platform, _ := cmd.Flags().GetString("platform")
			raw, err := schoolsRequest(api, cmd, http.MethodPost, "/schoolgate/schools/remove",
				map[string]any{"issuer": args[0], "platform": platform})
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(raw)
			return err
		},
	}
	list := &cobra.Command{
		Use:   "list [--limit <n>] [--after <cursor>]",
		Short: "List the schools with their state (a table), every page or one",
		Long: `
Lists the schools in the order of their issuers. Without --limit or --after
every page is read and printed as one table; with either, one page is, and
the command to read the next page follows it on stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return listSchoolsCommand(api, cmd) },
	}
	list.Flags().Int("limit", 0, fmt.Sprintf("the schools of one page (1 to %d; default %d)", adminapi.MaxSchoolsPage, adminapi.DefaultSchoolsPage))
	list.Flags().String("after", "", `the page after this cursor (an answer's "next")`)
	show := &cobra.Command{
		Use:   "show <issuer>",
		Short: "Show a school's record and state (JSON)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := showRequest(api, cmd, args[0])
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
	return root
}

// recordFlags are the flags that make a record, add's and set's.
func recordFlags(c *cobra.Command, config string) {
	c.Flags().String("upstream", "", "the legacy server (the school_gateway option upstream); it wins over --config and --option")
	c.Flags().StringArray("host", nil, "a further host name the school answers on (repeat for more)")
	c.Flags().String("config", "", config)
	c.Flags().StringArray("option", nil, "name=value: one school_gateway option, the value JSON when it reads as JSON, "+
		"else a string (a.b=value inside an object; repeat for more)")
}

// schoolRecord is a school's record as the admin API shows it, the part
// a change reads.
type schoolRecord struct {
	Hosts    []string        `json:"hosts"`
	Disabled bool            `json:"disabled"`
	Config   json.RawMessage `json:"config"`
	Version  int64           `json:"version"`
}

// addSchool adds a school the registry does not have: its write asks
// that there be none (if_version 0), so that it never replaces a record.
func addSchool(api AdminAPI, cmd *cobra.Command, issuer string) error {
	patches, err := ConfigChanges(cmd)
	if err != nil {
		return err
	}
	cfg, _, err := PatchConfig(nil, patches)
	if err != nil {
		return err
	}
	var opts map[string]json.RawMessage
	if json.Unmarshal(cfg, &opts) != nil || opts["upstream"] == nil {
		return errors.New("--upstream is required (or an upstream in --config or --option)")
	}
	fl := cmd.Flags()
	platform, _ := fl.GetString("platform")
	hosts, _ := fl.GetStringArray("host")
	disabled, _ := fl.GetBool("disable")
	body := map[string]any{"issuer": issuer, "platform": platform, "hosts": hosts, "disabled": disabled,
		"config": cfg, "if_version": 0}
	raw, err := schoolsRequest(api, cmd, http.MethodPost, "/schoolgate/schools", body)
	var refused *AdminError
	if errors.As(err, &refused) && refused.Status == http.StatusConflict {
		// The condition failed, or a host is another school's: only
		// the first is the school being there already.
		if have, readErr := readRecord(api, cmd, issuer); readErr == nil {
			return fmt.Errorf("%s is in the registry already (version %d): change it with "+
				"caddy schoolgate schools set %s --option name=value (or --upstream, --host, --config …)", issuer, have.Version, issuer)
		}
	}
	if err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write(raw)
	return err
}

// setTries bounds how often set reads a record again that another writer
// changed between its read and its write.
const setTries = 3

// setSchool changes what the flags name in a school's record: it reads
// the record, makes the change on it and writes it on condition of the
// version read (registry.Conditional, in the registry's write itself), so
// that a change another operator made meanwhile is not lost: refused, the
// change is made again on the record as it is now.
func setSchool(api AdminAPI, cmd *cobra.Command, issuer string) error {
	change, err := readSetFlags(cmd)
	if err != nil {
		return err
	}
	platform, _ := cmd.Flags().GetString("platform")
	for try := 1; ; try++ {
		current, err := readRecord(api, cmd, issuer)
		if err != nil {
			return err
		}
		body, changed, err := change.apply(current)
		if err != nil {
			return err
		}
		if !changed {
			return fmt.Errorf("%s has this already (version %d): nothing was written", issuer, current.Version)
		}
		body["issuer"], body["platform"] = issuer, platform
		// A file written by hand, never written through a registry, has
		// version 0, which a condition cannot name.
		if current.Version > 0 {
			body["if_version"] = current.Version
		}
		raw, err := schoolsRequest(api, cmd, http.MethodPost, "/schoolgate/schools", body)
		var refused *AdminError
		if !errors.As(err, &refused) || refused.Status != http.StatusConflict {
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(raw)
			return err
		}
		// Refused for the version, or for a host another school has:
		// the record read again tells which.
		now, readErr := readRecord(api, cmd, issuer)
		var gone *AdminError
		switch {
		case errors.As(readErr, &gone) && gone.Status == http.StatusNotFound:
			return fmt.Errorf("%s was removed from the registry while this change was made: nothing was written", issuer)
		case readErr != nil:
			return fmt.Errorf("%v; reading the record again: %w", err, readErr)
		case now.Version == current.Version:
			return err
		case try == setTries:
			return fmt.Errorf("%s was changed by another writer each of the %d times this change was made on it "+
				"(now version %d): nothing of this change was written; run the command again", issuer, setTries, now.Version)
		}
	}
}

// setChange is what set's flags change in a record.
type setChange struct {
	patches []map[string]any
	// hosts replace the aliases when setHosts.
	hosts    []string
	setHosts bool
	// disabled is set when setDisabled.
	disabled, setDisabled bool
}

func readSetFlags(cmd *cobra.Command) (setChange, error) {
	fl := cmd.Flags()
	var c setChange
	var err error
	if c.patches, err = ConfigChanges(cmd); err != nil {
		return c, err
	}
	c.hosts, _ = fl.GetStringArray("host")
	noHosts, _ := fl.GetBool("no-hosts")
	if noHosts && len(c.hosts) > 0 {
		return c, errors.New("--no-hosts and --host: say one")
	}
	c.setHosts = noHosts || fl.Changed("host")
	disable, _ := fl.GetBool("disable")
	enable, _ := fl.GetBool("enable")
	if disable && enable {
		return c, errors.New("--disable and --enable: say one")
	}
	c.disabled, c.setDisabled = disable, disable || enable
	if len(c.patches) == 0 && !c.setHosts && !c.setDisabled {
		return c, errors.New("name what to change: --option name=value, --unset name, --config <patch.json>, " +
			"--upstream, --host, --no-hosts, --disable or --enable")
	}
	return c, nil
}

// apply makes the change on a record: the body of its write, and
// whether it differs from the record.
func (c setChange) apply(r schoolRecord) (map[string]any, bool, error) {
	cfg, changed, err := PatchConfig(r.Config, c.patches)
	if err != nil {
		return nil, false, err
	}
	hosts, disabled := r.Hosts, r.Disabled
	if c.setHosts {
		changed = changed || !slices.Equal(c.hosts, hosts)
		hosts = c.hosts
	}
	if c.setDisabled {
		changed = changed || c.disabled != disabled
		disabled = c.disabled
	}
	return map[string]any{"hosts": hosts, "disabled": disabled, "config": cfg}, changed, nil
}

// readRecord reads a school's record through the admin API.
func readRecord(api AdminAPI, cmd *cobra.Command, issuer string) (schoolRecord, error) {
	var r schoolRecord
	raw, err := showRequest(api, cmd, issuer)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("reading the school's record: %v", err)
	}
	return r, nil
}

// showRequest reads one school's record from the admin API.
func showRequest(api AdminAPI, cmd *cobra.Command, issuer string) ([]byte, error) {
	q := url.Values{"issuer": {issuer}}
	if platform, _ := cmd.Flags().GetString("platform"); platform != "" {
		q.Set("platform", platform)
	}
	return schoolsRequest(api, cmd, http.MethodGet, "/schoolgate/schools?"+q.Encode(), nil)
}

// schoolsRequest makes one admin API request and returns its answer; a
// refusal is an *AdminError with the API's message, as for the other
// commands.
func schoolsRequest(api AdminAPI, cmd *cobra.Command, method, path string, body any) ([]byte, error) {
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
	adminAddr, err := api.Address(address, config, adapter)
	if err != nil {
		return nil, fmt.Errorf("finding the admin API: %v", err)
	}
	var header http.Header
	if body != nil {
		header = http.Header{"Content-Type": {"application/json"}}
	}
	resp, err := api.Do(adminAddr, method, path, header, reader)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// listSchoolsCommand is schools list: every page, or the one that
// --limit and --after ask for.
func listSchoolsCommand(api AdminAPI, cmd *cobra.Command) error {
	q := url.Values{}
	if platform, _ := cmd.Flags().GetString("platform"); platform != "" {
		q.Set("platform", platform)
	}
	one := cmd.Flags().Changed("limit") || cmd.Flags().Changed("after")
	limit, _ := cmd.Flags().GetInt("limit")
	after, _ := cmd.Flags().GetString("after")
	switch {
	case cmd.Flags().Changed("limit"):
		q.Set("limit", fmt.Sprint(limit))
	case !one:
		q.Set("limit", fmt.Sprint(adminapi.MaxSchoolsPage))
	}
	var all []adminapi.SchoolView
	for {
		if after != "" {
			q.Set("after", after)
		}
		raw, err := schoolsRequest(api, cmd, http.MethodGet, "/schoolgate/schools?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		var page adminapi.SchoolsPage
		if err := json.Unmarshal(raw, &page); err != nil {
			return fmt.Errorf("reading the listing: %v", err)
		}
		all = append(all, page.Schools...)
		if one {
			if err := printSchools(cmd.OutOrStdout(), all); err != nil {
				return err
			}
			if page.Next != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "more follow: caddy schoolgate schools list --after %s\n", page.Next)
			}
			return nil
		}
		if page.Next == "" {
			return printSchools(cmd.OutOrStdout(), all)
		}
		after = page.Next
	}
}

// printSchools writes the listing as a table.
func printSchools(out io.Writer, list []adminapi.SchoolView) error {
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
