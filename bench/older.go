package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// olderCaddy is a Caddy built from an older commit (-ab), serving a
// school of its own on the same upstream, beside this tree's Caddy: the
// token scenario measures both, interleaved, so that a regression shows
// the day it lands and not in a later comparison of separate runs.
type olderCaddy struct {
	commit string
	dir    string
	origin string
	// admin is its admin endpoint's address, "" when off (all but
	// with -profile, whose profiles come from it).
	admin string
	cmd   *exec.Cmd
}

func (o *olderCaddy) pid() int { return o.cmd.Process.Pid }

// startOlder builds commit's Caddy and starts it with the gateway's site
// block alone (its own data, no admin endpoint but with -profile), with
// -ab-global's options;
// and this tree's Caddy beside it with the very same Caddyfile, so that the
// uncontended A/B (abuncontended.go) compares two builds and nothing else
// (the stack's Caddy serves a dozen sites and more options).
func (s *stack) startOlder(commit, global string, admin bool) error {
	dir := filepath.Join(s.dir, "older")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	bin, err := buildCaddy(dir, commit)
	if err != nil {
		return err
	}
	if s.older, err = s.startAlone(dir, bin, commit, global, admin); err != nil {
		return err
	}
	dir = filepath.Join(s.dir, "this-alone")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	s.thisAlone, err = s.startAlone(dir, s.caddyBin, "this tree", "", admin)
	return err
}

// startAlone starts bin in dir serving the gateway's site block alone,
// with its admin endpoint on when admin is set.
func (s *stack) startAlone(dir, bin, commit, global string, admin bool) (*olderCaddy, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	o := &olderCaddy{commit: commit, dir: dir, origin: "http://" + addr}
	adminOpt := "off"
	if admin {
		if o.admin, err = freeAddr(); err != nil {
			return nil, err
		}
		adminOpt = o.admin
	}
	caddyfile := fmt.Sprintf("{\n\tadmin %s\n\tpersist_config off\n\tstorage file_system %s/caddy-storage\n%s\n}\n%s",
		adminOpt, dir, global, s.gatewaySite(o.origin, dir+"/data"))
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(caddyfile), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "caddy.log"))
	if err != nil {
		return nil, err
	}
	o.cmd = exec.Command(bin, "run", "--config", path, "--adapter", "caddyfile")
	o.cmd.Stdout, o.cmd.Stderr = logf, logf
	o.cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg-config"),
		"XDG_DATA_HOME="+filepath.Join(dir, "xdg-data"))
	if err := o.cmd.Start(); err != nil {
		return nil, err
	}
	return o, waitUp(o.origin+"/.well-known/oauth-authorization-server", 200)
}

func (o *olderCaddy) stop() {
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	_ = o.cmd.Wait()
}
