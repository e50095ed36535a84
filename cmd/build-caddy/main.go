// Command build-caddy builds a production Caddy with the schoolgate
// modules from xcaddy.json, whose keys are those of xcaddy's Builder:
//
//	go run ./cmd/build-caddy -o caddy
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/caddyserver/xcaddy"
)

func main() {
	config := flag.String("config", "xcaddy.json", "build description (xcaddy Builder keys)")
	output := flag.String("o", "caddy", "output binary")
	flag.Parse()
	if err := build(*config, *output); err != nil {
		fmt.Fprintln(os.Stderr, "build-caddy:", err)
		os.Exit(1)
	}
}

func build(config, output string) error {
	raw, err := os.ReadFile(config)
	if err != nil {
		return err
	}
	var b xcaddy.Builder
	if err := json.Unmarshal(raw, &b); err != nil {
		return fmt.Errorf("%s: %v", config, err)
	}
	// Relative replacements are relative to the description file.
	base := filepath.Dir(config)
	for i, r := range b.Replacements {
		if p := string(r.New); strings.HasPrefix(p, ".") {
			abs, err := filepath.Abs(filepath.Join(base, p))
			if err != nil {
				return err
			}
			b.Replacements[i].New = xcaddy.ReplacementPath(abs)
		}
	}
	// A replaced module is unknown to the module proxy; let the go tool
	// fall back to the local copy instead of failing on the proxy's answer.
	if os.Getenv("GOPROXY") == "" {
		os.Setenv("GOPROXY", "https://proxy.golang.org|off")
	}
	out, err := filepath.Abs(output)
	if err != nil {
		return err
	}
	return b.Build(context.Background(), out)
}
