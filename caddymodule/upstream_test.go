package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// proxyOf adapts a site block and returns its reverse_proxy configuration
// (inside the schoolgate_upstream handler).
func proxyOf(t *testing.T, gateway string) (map[string]any, error) {
	t.Helper()
	raw, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte("http://127.0.0.1:8080 {\n"+gateway+"\n}\n"), nil)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		Apps struct {
			HTTP struct {
				Servers map[string]struct {
					Routes []struct {
						Handle []map[string]any `json:"handle"`
					} `json:"routes"`
				} `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	for _, srv := range cfg.Apps.HTTP.Servers {
		for _, r := range srv.Routes {
			for _, h := range r.Handle {
				if h["handler"] == "schoolgate_upstream" {
					return h["proxy"].(map[string]any), nil
				}
			}
			// The site's route wraps ours in a subroute.
			for _, h := range r.Handle {
				for _, sr := range h["routes"].([]any) {
					for _, hh := range sr.(map[string]any)["handle"].([]any) {
						if m := hh.(map[string]any); m["handler"] == "schoolgate_upstream" {
							return m["proxy"].(map[string]any), nil
						}
					}
				}
			}
		}
	}
	t.Fatalf("no schoolgate_upstream in %s", raw)
	return nil, nil
}

func TestUpstreamBlock(t *testing.T) {
	tests := []struct {
		name, gateway string
		want          []string // substrings of the adapted reverse_proxy JSON
		absent        []string
	}{
		{"no block: defaults", `school_gateway http://127.0.0.1:9080`,
			[]string{`"dial":"127.0.0.1:9080"`, `"max_idle_conns_per_host":128`, `"dial_timeout":5000000000`,
				`"response_header_timeout":60000000000`}, nil},
		{"the budget's legacy_timeout", `school_gateway http://127.0.0.1:9080 {
			budget {
				legacy_timeout 3m
			}
		}`, []string{`"response_header_timeout":180000000000`}, nil},
		{"two upstreams and a health check", `school_gateway http://127.0.0.1:9080 {
			upstream http://127.0.0.1:9081 {
				lb_policy round_robin
				health_uri /healthz
				health_interval 2s
				header_up X-School-Proxy gateway
			}
		}`, []string{`"dial":"127.0.0.1:9080"`, `"dial":"127.0.0.1:9081"`, `"policy":"round_robin"`, `"uri":"/healthz"`,
			`"max_idle_conns_per_host":128`, `"X-School-Proxy":["gateway"]`}, nil},
		{"to inside the block", `school_gateway http://127.0.0.1:9080 {
			upstream {
				to http://127.0.0.1:9082
			}
		}`, []string{`"dial":"127.0.0.1:9080"`, `"dial":"127.0.0.1:9082"`}, nil},
		{"own transport replaces the default", `school_gateway http://127.0.0.1:9080 {
			upstream {
				transport http {
					dial_timeout 2s
				}
			}
		}`, []string{`"dial_timeout":2000000000`, `"response_header_timeout":60000000000`}, []string{`"max_idle_conns_per_host":128`}},
		// An own transport that sets no timeout of its own would wait on
		// a legacy server that never answers as long as the client does.
		{"own transport gets the legacy timeout", `school_gateway http://127.0.0.1:9080 {
			budget {
				legacy_timeout 90s
			}
			upstream {
				transport http {
					keepalive 30s
				}
			}
		}`, []string{`"response_header_timeout":90000000000`}, nil},
		{"own transport keeps its own timeout", `school_gateway http://127.0.0.1:9080 {
			upstream {
				transport http {
					response_header_timeout 5m
				}
			}
		}`, []string{`"response_header_timeout":300000000000`}, []string{`60000000000`}},
		{"fastcgi gets a read timeout", `school_gateway http://127.0.0.1:9080 {
			upstream {
				transport fastcgi {
					root /srv/school
				}
			}
		}`, []string{`"protocol":"fastcgi"`, `"read_timeout":60000000000`}, []string{`response_header_timeout`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := proxyOf(t, tt.gateway)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(h)
			for _, w := range tt.want {
				if !strings.Contains(string(raw), w) {
					t.Errorf("reverse_proxy lacks %s: %s", w, raw)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(string(raw), a) {
					t.Errorf("reverse_proxy has %s: %s", a, raw)
				}
			}
		})
	}
}

func TestUpstreamBlockErrors(t *testing.T) {
	for name, gateway := range map[string]string{
		"unknown reverse_proxy option": "school_gateway http://127.0.0.1:9080 {\n upstream {\n  no_such_option 1\n }\n}",
		"two blocks":                   "school_gateway http://127.0.0.1:9080 {\n upstream {\n  lb_policy first\n }\n upstream {\n  lb_policy first\n }\n}",
		"mixed schemes":                "school_gateway http://127.0.0.1:9080 {\n upstream https://127.0.0.1:9443\n}",
	} {
		if _, err := proxyOf(t, gateway); err == nil {
			t.Errorf("%s: adapted without error", name)
		}
	}
}
