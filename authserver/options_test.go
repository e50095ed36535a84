package authserver

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/option"
)

// The rate_limit option becomes the server's limits: each named limit in
// place of its default (the burst defaulting to the events), the others
// left as they are; off is no limit at all.
func TestRateLimitOptions(t *testing.T) {
	o := &RateLimitOptions{Limits: map[string]option.Rate{
		"token":    {Events: 100, Period: option.Duration(time.Second), Burst: 50},
		"register": {Events: 5, Period: option.Duration(time.Hour)},
	}}
	l := o.limits()
	if l.Token.Every != 10*time.Millisecond || l.Token.Burst != 50 || l.Register.Every != 12*time.Minute ||
		l.Register.Burst != 5 || l.TokenClient != DefaultRateLimits.TokenClient {
		t.Errorf("rate limits %+v", l)
	}
	if l := (*RateLimitOptions)(nil).limits(); l != DefaultRateLimits {
		t.Errorf("no rate_limit: %+v, want the defaults", l)
	}
	if l := (&RateLimitOptions{Off: true}).limits(); l != (RateLimits{}) {
		t.Errorf("rate_limit off: %+v, want no limit", l)
	}
}

// The JSON of the options is read as a site block's and a registry
// record's, and checked with messages that name the option.
func TestOptionsCheckNamesTheOption(t *testing.T) {
	tests := []struct{ json, want string }{
		{`{}`, ""},
		{`{"code_ttl": "90s", "refresh_token_ttl": "30d", "dpop": "required", "dpop_nonce": true}`, ""},
		{`{"rate_limits": {"limits": {"tokens": {"events": 1, "period": "1s"}}}}`, `rate_limit: unknown limit "tokens"`},
		{`{"rate_limits": {"limits": {"token": {"events": 0, "period": "1s"}}}}`, "rate_limit token"},
		{`{"audit_retention": "1h"}`, "audit_retention"},
		{`{"dpop": "off", "dpop_nonce": true}`, "dpop_nonce"},
		{`{"vendors": [{"name": "V", "client_id": "v"}]}`, "redirect_uri"},
	}
	for _, tt := range tests {
		var o Options
		if err := json.Unmarshal([]byte(tt.json), &o); err != nil {
			t.Fatalf("%s: %v", tt.json, err)
		}
		err := o.Check()
		if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want mention of %q", tt.json, err, tt.want)
		}
	}
	var o Options
	if err := json.Unmarshal([]byte(`{"dpop": "mandatory"}`), &o); err == nil || !strings.Contains(err.Error(), `dpop: "mandatory" is not off, allowed or required`) {
		t.Errorf("dpop mandatory: %v", err)
	}
}
