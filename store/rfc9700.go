package store

import "time"

// The RFC 9700 rules for codes and refresh tokens, decided here once from
// the rows a store's transaction has read (and, in a SQL store, locked).
// A store applies the outcome in that same transaction and never decides
// on its own, so every store behaves alike and storetest can hold each of
// them to the same results.

// RedeemOutcome is what a store does with a code being redeemed.
type RedeemOutcome int

const (
	// RedeemIssue: the code's first use. Call issue, mark the code used
	// with the new grant's ID, store the grant and tokens.
	RedeemIssue RedeemOutcome = iota
	// RedeemReplay: the code was used before, so whoever holds it may be an
	// attacker who intercepted it (RFC 9700 §4.5). Revoke the grant it
	// issued, call nothing, and answer ErrCodeReuse.
	RedeemReplay
)

// DecideRedeem decides from the code as stored.
func DecideRedeem(c *Code) RedeemOutcome {
	if c.Used {
		return RedeemReplay
	}
	return RedeemIssue
}

// Err is what RedeemCode returns once the outcome has committed.
func (o RedeemOutcome) Err() error {
	if o == RedeemReplay {
		return ErrCodeReuse
	}
	return nil
}

// RotateOutcome is what a store does with a refresh token being rotated.
type RotateOutcome int

const (
	// RotateFirst: never rotated. Call rotate, store its tokens and set
	// the token's RotatedAt to now.
	RotateFirst RotateOutcome = iota
	// RotateAgain: rotated within the grace window, as when a client
	// retries after losing the answer. Call rotate and store its tokens;
	// RotatedAt keeps the first rotation's time, so the window never
	// slides.
	RotateAgain
	// RotateReplay: rotated longer than the grace window ago, the sign of
	// a stolen token (RFC 9700 §4.14.2). Revoke the grant, call nothing,
	// and answer ErrRefreshReuse.
	RotateReplay
)

// DecideRotate decides from the refresh token as stored.
func DecideRotate(t *Token, now time.Time, grace time.Duration) RotateOutcome {
	switch {
	case t.RotatedAt.IsZero():
		return RotateFirst
	case grace <= 0 || now.Sub(t.RotatedAt) > grace:
		// Without a grace window any second use is a replay, even one
		// whose clock reads earlier than the first rotation's (two
		// instances, or a request that waited for the row's lock).
		return RotateReplay
	}
	return RotateAgain
}

// Err is what RotateRefresh returns once the outcome has committed.
func (o RotateOutcome) Err() error {
	if o == RotateReplay {
		return ErrRefreshReuse
	}
	return nil
}

// RevokeOutcome is what a store does with a token being revoked.
type RevokeOutcome int

const (
	// RevokeOne: an access token; mark it revoked, its grant lives on.
	RevokeOne RevokeOutcome = iota
	// RevokeWholeGrant: a refresh token stands for the whole grant (RFC
	// 7009 §2.1), so revoke the grant and with it every token it issued.
	RevokeWholeGrant
)

// DecideRevoke decides from the token as stored.
func DecideRevoke(t *Token) RevokeOutcome {
	if t.Kind == TokenRefresh {
		return RevokeWholeGrant
	}
	return RevokeOne
}
