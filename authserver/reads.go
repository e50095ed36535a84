package authserver

import (
	"context"

	"github.com/schoolgate/schoolgate/store"
)

// Reads are the operator's reads of a school that need only its store
// and its configured clients: its clients, its connected applications
// and their grants, its MCP connections switch. Server answers them with
// its own; ReadsOf answers them for a school not running here (a
// platform's idle school, which reading must not build), from a store
// opened for reading alone.
type Reads struct {
	store   ReadSource
	vendors map[string]*store.Client
}

// ReadSource is what Reads use of a store.
type ReadSource interface {
	GetClient(ctx context.Context, id string) (*store.Client, error)
	ListClients(ctx context.Context) ([]*store.Client, error)
	ListGrants(ctx context.Context, q store.GrantQuery) ([]*store.Grant, error)
	GrantCounts(ctx context.Context) (map[string]store.GrantCount, error)
	GetSetting(ctx context.Context, key string) ([]byte, error)
}

// ReadsOf are the reads of the school with the configured vendors whose
// store is src.
func ReadsOf(src ReadSource, vendors []VendorClient) Reads {
	return Reads{store: src, vendors: vendorClients(vendors)}
}

func (s *Server) reads() Reads { return Reads{store: s.store, vendors: s.vendors} }

// ListClients is Reads.ListClients of the school's store.
func (s *Server) ListClients(ctx context.Context) ([]ClientInfo, error) {
	return s.reads().ListClients(ctx)
}

// ConnectedApps is Reads.ConnectedApps of the school's store.
func (s *Server) ConnectedApps(ctx context.Context) ([]ConnectedApp, error) {
	return s.reads().ConnectedApps(ctx)
}

// ListGrants is Reads.ListGrants of the school's store.
func (s *Server) ListGrants(ctx context.Context, f GrantFilter) (GrantPage, error) {
	return s.reads().ListGrants(ctx, f)
}

// MCPConnectionsEnabled is Reads.MCPConnectionsEnabled of the school's
// store.
func (s *Server) MCPConnectionsEnabled(ctx context.Context) (bool, error) {
	return s.reads().MCPConnectionsEnabled(ctx)
}

func (s *Server) knownClient(ctx context.Context, id string, seen map[string]*store.Client) (*store.Client, error) {
	return s.reads().knownClient(ctx, id, seen)
}
