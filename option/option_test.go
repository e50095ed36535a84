package option

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"90s", 90 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"180d", 180 * 24 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"1.5d", 36 * time.Hour},
		{"-2d", -48 * time.Hour},
		{"2h1d", 26 * time.Hour},
		{"0", 0},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "d", "1x", "1dd", "abc", "1d-", strings.Repeat("1", 1025) + "s"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) read", bad)
		}
	}
}

func TestDurationJSON(t *testing.T) {
	var v struct {
		A Duration `json:"a"`
		B Duration `json:"b"`
	}
	if err := json.Unmarshal([]byte(`{"a": "1d", "b": 1500000000}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.A.D() != 24*time.Hour || v.B.D() != 1500*time.Millisecond {
		t.Errorf("read %v, %v", v.A, v.B)
	}
	out, _ := json.Marshal(v)
	if string(out) != `{"a":86400000000000,"b":1500000000}` {
		t.Errorf("written %s", out)
	}
	for _, bad := range []string{`{"a": "soon"}`, `{"a": true}`, `{"a": 1.5}`} {
		if err := json.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("%s read", bad)
		}
	}
}

func TestParseRate(t *testing.T) {
	r, err := ParseRate("budget requests", []string{"30/m"})
	if err != nil || r.Events != 30 || r.Period.D() != time.Minute || r.Burst != 30 {
		t.Fatalf("30/m = %+v, %v", r, err)
	}
	if r, err = ParseRate("x", []string{"100/s", "200"}); err != nil || r.Burst != 200 {
		t.Fatalf("100/s 200 = %+v, %v", r, err)
	}
	for _, args := range [][]string{nil, {"30"}, {"30/d"}, {"0/s"}, {"5/s", "0"}, {"5/s", "1", "2"}} {
		if _, err := ParseRate("budget requests", args); err == nil || !strings.HasPrefix(err.Error(), "budget requests: ") {
			t.Errorf("%q: %v", args, err)
		}
	}
	if err := (&Rate{Events: 1, Period: Duration(time.Second)}).Check("r"); err != nil {
		t.Error(err)
	}
	if err := (&Rate{Events: 1}).Check("rate_limit token"); err == nil || !strings.HasPrefix(err.Error(), "rate_limit token:") {
		t.Errorf("a rate without a period: %v", err)
	}
}
