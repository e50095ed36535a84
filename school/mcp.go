package school

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/mcpserver"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
)

// builtMCP is a built MCP server and the school name it tells agents.
type builtMCP struct {
	handler http.Handler
	name    string
}

// mcpHandler returns the MCP server, building it on the first request.
func (s *Site) mcpHandler() (http.Handler, error) {
	if b := s.mcp.Load(); b != nil {
		return b.handler, nil
	}
	s.mcpBuild.Lock()
	defer s.mcpBuild.Unlock()
	if b := s.mcp.Load(); b != nil {
		return b.handler, nil
	}
	name := s.schoolName()
	mcp, err := mcpserver.New(mcpserver.Options{
		SiteName:            name,
		Origin:              s.cfg.Issuer,
		ResourceMetadataURL: s.as.ResourceMetadataURL(),
		Authorize:           s.as.Guard().Authorize,
		Catalog:             s.awaitCatalog,
		Account:             s.accountQuery,
		Logger:              s.log,
	})
	if err != nil {
		return nil, fmt.Errorf("mcp: %v", err)
	}
	s.mcp.Store(&builtMCP{handler: mcp, name: name})
	return mcp, nil
}

// renameMCP drops an MCP server built under another name than the
// school's, so that the next request builds one that greets agents with
// the right name: a first request before the first catalog import names
// the school by its origin. The server keeps no session (see mcpserver.New),
// so requests under way finish on the old one and nothing is lost.
func (s *Site) renameMCP() {
	if b := s.mcp.Load(); b != nil && b.name != s.schoolName() {
		s.mcp.CompareAndSwap(b, nil)
	}
}

// awaitCatalog is the MCP server's catalog: on a school whose store has
// no feed yet, an agent that calls a catalog tool in the first moments
// after start-up waits for the first import instead of being told to come
// back in a minute.
func (s *Site) awaitCatalog(ctx context.Context) *catalog.Index {
	return s.catalog.Await(ctx, firstImportWait)
}

// firstImportWait bounds that wait: a feed that takes longer (or an
// upstream that is not up yet) gets the "not loaded yet" tool error.
const firstImportWait = 10 * time.Second

// serveMCP serves /mcp: anonymous without a token, with the validated
// token for a valid one, and a challenge for any token that is not valid
// here (never a silent fall back to anonymous).
func (s *Site) serveMCP(w http.ResponseWriter, r *http.Request) {
	mcp, err := s.mcpHandler()
	if err != nil {
		_ = s.WriteUnavailable(w, "starting the MCP server", err)
		return
	}
	if r.Header.Get("Authorization") == "" || r.Method == http.MethodOptions {
		s.observe.MCPCaller("anonymous")
		mcp.ServeHTTP(w, r)
		return
	}
	tok, ch := s.as.Guard().Check(w, r, policy.Requirement{})
	if ch != nil {
		caller := "refused"
		if ch.Status == http.StatusServiceUnavailable {
			caller = callerUnavailable // the token was not judged: the store failed
		}
		s.observe.MCPCaller(caller)
		ch.ResourceMetadata = s.as.ResourceMetadataURL()
		ch.Write(w)
		return
	}
	stripCredentials(r.Header)
	s.observe.MCPCaller(tok.Audience)
	// An operator's token too: the tools serve it as anonymous, but its
	// call of a member tool gets the Account API's 403, not sign-in
	// directions (mcpserver's stepup.go).
	r = r.WithContext(mcpserver.WithIdentity(r.Context(), tok))
	mcp.ServeHTTP(w, r)
}

// accountQuery runs a member's GraphQL query at the upstream Account API
// with the identity headers of the member's validated token (and its
// identity assertion, when on); the client's token never leaves the
// gateway. Without a validated token no call is made.
func (s *Site) accountQuery(ctx context.Context, tok *policy.Token, query string, variables map[string]any) (json.RawMessage, error) {
	if tok == nil {
		return nil, errors.New("the Account API is called only for a member's validated token")
	}
	body, err := json.Marshal(map[string]any{"query": query, "variables": variables})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.Upstream+sitepath.AccountAPI, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = s.identityHeaderValues(tok)
	if err := s.setAssertion(req.Header, tok); err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	switch {
	case errors.Is(err, errLegacyBusy):
		return nil, fmt.Errorf("the school's Account API is busy; try again in a moment")
	case err != nil && isTimeout(err):
		return nil, fmt.Errorf("the school's Account API did not answer in time")
	case err != nil:
		return nil, fmt.Errorf("the school's Account API is unreachable")
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || !json.Valid(raw) {
		return nil, fmt.Errorf("the school's Account API answered %d: %s", resp.StatusCode,
			strings.TrimSpace(string(raw[:min(len(raw), 200)])))
	}
	return raw, nil
}
