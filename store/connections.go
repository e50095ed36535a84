package store

import (
	"slices"
	"time"
)

// Connection is everything one person gave one client: their live grants
// of it taken together, as one row of the person's page or the operator's.
// Disconnecting ends all of them (GrantStore.DisconnectClient).
type Connection struct {
	ClientID string
	// Identity is the person as their latest grant names them.
	Identity Identity
	// Grants counts the live grants: one per authorization (another
	// device, another sign-in, prompt=consent).
	Grants int
	// Scopes are those any of the grants holds, in the order first granted.
	Scopes []string
	// Audiences are those the grants act for, each once.
	Audiences []string
	// Since is the earliest grant's CreatedAt; LastUsed the latest
	// Grant.LastUsed of any.
	Since, LastUsed time.Time
}

// Add counts g into the connection. Stores add a group's grants in list
// order (CreatedAt, then ID), so the last one added names the person.
func (c *Connection) Add(g *Grant) {
	if c.Grants == 0 {
		c.ClientID, c.Since = g.ClientID, g.CreatedAt
	}
	c.Grants++
	c.Identity = g.Identity
	for _, sc := range g.Scopes {
		if !slices.Contains(c.Scopes, sc) {
			c.Scopes = append(c.Scopes, sc)
		}
	}
	if !slices.Contains(c.Audiences, g.Audience) {
		c.Audiences = append(c.Audiences, g.Audience)
	}
	c.Since = minTime(c.Since, g.CreatedAt)
	c.LastUsed = maxTime(c.LastUsed, g.LastUsed())
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
