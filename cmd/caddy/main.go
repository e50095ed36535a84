// Command caddy is the development build of Caddy with the schoolgate
// modules compiled in. Production builds use xcaddy with xcaddy.json; both
// contain the same modules.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	// Caddy's standard modules.
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	// The schoolgate modules.
	_ "github.com/schoolgate/schoolgate/caddymodule"
)

func main() {
	caddycmd.Main()
}
