package school

// The causes of a request refused for want of capacity, counted by
// Observer.RequestRefused. They are a fixed set, because they are the
// values of a metric's label: a cause is never made of anything a
// request carries.
const (
	// RefusedFairShare: the instance was contended and the request's
	// school had had its share (fair_share).
	RefusedFairShare = "fair_share"
	// RefusedBudgetRequests: the school's budget requests rate was spent.
	RefusedBudgetRequests = "budget_requests"
	// RefusedBudgetMCPAnonymous: the school's budget mcp_anonymous rate,
	// every anonymous /mcp caller together, was spent.
	RefusedBudgetMCPAnonymous = "budget_mcp_anonymous"
	// RefusedMCPAnonymousAddress: one address's anonymous /mcp rate
	// (rate_limit mcp_anonymous) was spent.
	RefusedMCPAnonymousAddress = "mcp_anonymous_address"
	// RefusedLegacyBusy: the school's legacy server had as many requests
	// waiting on it as its budget legacy_concurrency allows.
	RefusedLegacyBusy = "legacy_busy"
	// RefusedLegacyTimeout: the school's legacy server did not answer in
	// time.
	RefusedLegacyTimeout = "legacy_timeout"
)

// RefusalCauses are every cause RequestRefused is given, in the
// documents' order.
func RefusalCauses() []string {
	return []string{RefusedFairShare, RefusedBudgetRequests, RefusedBudgetMCPAnonymous,
		RefusedMCPAnonymousAddress, RefusedLegacyBusy, RefusedLegacyTimeout}
}
