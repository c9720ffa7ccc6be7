package client

import (
	"slices"
	"strings"
	"testing"
)

func TestSplitServers(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "127.0.0.1:6443", want: "127.0.0.1:6443"},
		{in: "a:6443,b:6443", want: "a:6443 b:6443"},
		{in: " a:6443 , [::1]:6443", want: "a:6443 [::1]:6443"},
		{in: "a:6443,", err: "empty address"},
		{in: "a", err: `"a" is not host:port`},
		{in: "a:6443,a:6443", err: "listed twice"},
	} {
		got, err := SplitServers(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, strings.Fields(tc.want)) {
			t.Errorf("%q: %v %v, want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestEachServer(t *testing.T) {
	each, err := Config{Server: "a:1,b:2", UserAgent: "x"}.EachServer()
	if err != nil || len(each) != 2 || each[0].Server != "a:1" || each[1].Server != "b:2" || each[1].UserAgent != "x" {
		t.Fatalf("%+v %v", each, err)
	}
}
