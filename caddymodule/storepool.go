package caddymodule

import (
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/authserver"
)

// stores holds each site's bbolt file open across config reloads. Caddy
// provisions a new config before cleaning up the old one, and a second
// bolt.Open of the same file would wait on its lock forever; sharing the
// handle through a usage pool (as Caddy's acme_server does) avoids that.
var stores = caddy.NewUsagePool()

// storeLockTimeout bounds the wait for a file lock held by another process.
const storeLockTimeout = 5 * time.Second

// storeCallTimeout bounds a store call made on behalf of no request.
const storeCallTimeout = 5 * time.Second

type pooledStore struct{ authserver.Store }

// Destruct closes the file once no config uses it.
func (p pooledStore) Destruct() error { return p.Close() }

func acquireStore(path string) (authserver.Store, error) {
	v, _, err := stores.LoadOrNew(path, func() (caddy.Destructor, error) {
		s, err := authserver.OpenBolt(path, storeLockTimeout)
		if err != nil {
			return nil, err
		}
		return pooledStore{s}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(pooledStore).Store, nil
}

func releaseStore(path string) error {
	_, err := stores.Delete(path)
	return err
}
