// Package schoolgate is the plugin's import path for xcaddy: importing it
// registers the schoolgate Caddy modules (see caddymodule).
package schoolgate

import _ "github.com/schoolgate/schoolgate/caddymodule"
