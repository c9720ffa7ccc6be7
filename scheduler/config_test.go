package scheduler

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" for valid
	}{
		{"zero is valid", Config{}, ""},
		{"percentage too high", Config{PercentageOfNodesToScore: 101}, "--percentage-of-nodes-to-score"},
		{"percentage negative", Config{PercentageOfNodesToScore: -1}, "--percentage-of-nodes-to-score"},
		{"negative parallelism", Config{Parallelism: -2}, "--parallelism"},
		{"negative bind concurrency", Config{BindConcurrency: -1}, "--bind-concurrency"},
		{"unknown filter", Config{Filters: []string{"NodeReady", "Bogus"}}, `--filters: unknown filter "Bogus"`},
		{"no filters", Config{Filters: []string{""}}, "--filters: empty"},
		{"bad score weight", Config{Scores: []string{"LeastAllocated=0"}}, "--scores"},
		{"renew not below lease", Config{LeaderElect: true, LeaseDuration: time.Second, RenewDeadline: time.Second}, "--leader-elect-renew-deadline"},
		{"negative retry", Config{RetryPeriod: -time.Second}, "--leader-elect-retry-period"},
		{"bad metrics address", Config{MetricsListen: "10259"}, "--metrics-listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}
