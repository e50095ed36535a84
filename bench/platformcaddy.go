package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// platformCaddy is one Caddy running the platform.
type platformCaddy struct {
	cmd        *exec.Cmd
	began      time.Time // when the process was started
	name       string
	admin, log string
	// client and noRedirect dial this instance whatever the school's
	// host name, so that sN.localhost needs no resolver and one name
	// reaches either instance.
	client, noRedirect *http.Client
}

// startCaddy starts a Caddy serving the platform on port.
func (p *platformRun) startCaddy(base, name string, port int, registryLine string) (*platformCaddy, error) {
	admin, err := freeAddr()
	if err != nil {
		return nil, err
	}
	caddyfile := fmt.Sprintf(`{
	admin %[1]s
	persist_config off
	storage file_system %[2]s/caddy-storage-%[3]s
}

http://:%[4]d {
	school_platform {
		%[5]s
		max_active %[6]d
	}
}
`, admin, base, name, port, registryLine, p.cfg.maxActive)
	return launchCaddy(p.caddyBin, base, name, port, admin, caddyfile)
}

// launchCaddy starts the Caddy binary bin on caddyfile (whose admin
// endpoint is admin), its files under base named by name; its clients
// dial port whatever the host name asked.
func launchCaddy(bin, base, name string, port int, admin, caddyfile string) (*platformCaddy, error) {
	config := filepath.Join(base, "Caddyfile-"+name)
	if err := os.WriteFile(config, []byte(caddyfile), 0o600); err != nil {
		return nil, err
	}
	c := &platformCaddy{name: name, admin: admin, log: filepath.Join(base, "caddy-"+name+".log")}
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", port))
	}
	transport := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 128, DialContext: dial, DisableCompression: true}
	c.client = &http.Client{Timeout: 30 * time.Second, Transport: transport}
	c.noRedirect = &http.Client{Timeout: 30 * time.Second, Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	logf, err := os.Create(c.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	c.cmd = exec.Command(bin, "run", "--config", config, "--adapter", "caddyfile")
	c.cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(base, "xdg-data-"+name),
		"XDG_CONFIG_HOME="+filepath.Join(base, "xdg-config-"+name))
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.began = time.Now()
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *platformCaddy) pid() int { return c.cmd.Process.Pid }

func (c *platformCaddy) stop() {
	// Caddy's shutdown waits for idle kept-alive connections a while.
	c.client.CloseIdleConnections()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	_ = c.cmd.Wait()
}

// failure adds the end of the instance's log to an error.
func (c *platformCaddy) failure(err error) error {
	raw, _ := os.ReadFile(c.log)
	if len(raw) > 3000 {
		raw = raw[len(raw)-3000:]
	}
	return fmt.Errorf("instance %s: %v\nthe end of its log:\n%s", c.name, err, raw)
}

// discovery asks the school of host for its discovery document and
// returns the status and, on 200, the issuer it names.
func (c *platformCaddy) discovery(ctx context.Context, host string) (int, string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+discoveryPath, nil)
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp.StatusCode, "", err
	}
	var doc struct {
		Issuer string `json:"issuer"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return resp.StatusCode, "", fmt.Errorf("discovery of %s is not JSON: %.200s", host, body)
	}
	return resp.StatusCode, doc.Issuer, nil
}

// waitIssuer polls the school's discovery every 10 ms until it answers
// with its issuer, for at most a minute from since.
func (c *platformCaddy) waitIssuer(p *platformRun, name string, since time.Time) error {
	return c.waitFor(p.host(name), since, p.startLimit(), func(status int, issuer string) bool {
		return status == http.StatusOK && issuer == p.issuer(name)
	})
}

// waitFor polls the discovery of host every 10 ms until done says so.
func (c *platformCaddy) waitFor(host string, since time.Time, limit time.Duration, done func(status int, issuer string) bool) error {
	ctx, cancel := context.WithDeadline(context.Background(), since.Add(limit))
	defer cancel()
	var last string
	for {
		status, issuer, err := c.discovery(ctx, host)
		if err == nil && done(status, issuer) {
			return nil
		}
		last = fmt.Sprintf("HTTP %d issuer %q error %v", status, issuer, err)
		select {
		case <-ctx.Done():
			return c.failure(fmt.Errorf("%s: no expected answer within %s, last: %s", host, limit, last))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// token gets a member access token of the school name at c: the consent
// of the bench's vendor client, then the code exchange.
func (c *platformCaddy) token(ctx context.Context, p *platformRun, name string) (string, error) {
	o := &oauthClient{origin: p.issuer(name), http: c.noRedirect}
	code, err := o.authorize(ctx)
	if err != nil {
		return "", fmt.Errorf("school %s: %v", name, err)
	}
	t, err := o.exchange(ctx, code)
	if err != nil {
		return "", fmt.Errorf("school %s: %v", name, err)
	}
	return t.Access, nil
}

// protected sends one Account API request to the school of host.
func (c *platformCaddy) protected(ctx context.Context, host, token string) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+host+"/account/graphql", strings.NewReader(viewerQuery))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// adminGet sends a GET to the instance's admin API and discards the answer.
func (c *platformCaddy) adminGet(path string) { adminGet(c.admin, path) }

// active is the number of built schools /schoolgate/health reports, -1
// if it cannot tell.
func (c *platformCaddy) active() int {
	resp, err := http.Get("http://" + c.admin + "/schoolgate/health")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var h struct {
		Platforms []struct {
			Active int `json:"active"`
		} `json:"platforms"`
	}
	if json.NewDecoder(resp.Body).Decode(&h) != nil || len(h.Platforms) != 1 {
		return -1
	}
	return h.Platforms[0].Active
}
