package troubleshoot

import (
	"strings"
	"testing"
)

func TestExecArgs(t *testing.T) {
	tests := []struct {
		args []string
		dash int
		pod  string
		cmd  string
		err  string
	}{
		{[]string{"web", "ls", "-l"}, 1, "web", "ls -l", ""},
		{[]string{"web", "ls"}, -1, "web", "ls", ""},
		{[]string{"deploy/api", "sh", "-c", "a b"}, 1, "deploy/api", "sh -c a b", ""},
		{[]string{"ls"}, 0, "", "", "name the pod"},
		{nil, -1, "", "", "name the pod"},
		{[]string{"web"}, 1, "", "", "no command"},
		{[]string{"a", "b", "ls"}, 2, "", "", "one POD before --"},
	}
	for _, tc := range tests {
		pod, cmd, err := execArgs(tc.args, tc.dash)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || pod != tc.pod || strings.Join(cmd, " ") != tc.cmd {
			t.Errorf("%v: got %q %q %v", tc.args, pod, cmd, err)
		}
	}
}
