package image

import "testing"

func TestProgressLineAndBytes(t *testing.T) {
	tests := []struct {
		sent, total int64
		want        string
	}{
		{0, 1000, "n1 [>         ]   0% 0B/1000B"},
		{512 << 10, 1 << 20, "n1 [=====>    ]  50% 512.0KiB/1.0MiB"},
		{1 << 20, 1 << 20, "n1 [==========] 100% 1.0MiB/1.0MiB"},
		{0, 0, "n1 [==========] 100% 0B/0B"},
	}
	for _, tc := range tests {
		if got := progressLine("n1", tc.sent, tc.total, 10); got != tc.want {
			t.Errorf("progressLine(%d, %d) = %q, want %q", tc.sent, tc.total, got, tc.want)
		}
	}
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1536: "1.5KiB", 27 << 20: "27.0MiB", 3 << 30: "3.0GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
