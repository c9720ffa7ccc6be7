package tugctl

import (
	"slices"
	"strings"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// TestCompletion: the shell scripts come out, and the names completed are
// the cluster's (cobra's __complete is what the scripts call).
func TestCompletion(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"web-1", "web-2", "db"} {
		mustCreate(t, e.c, &v1.Pod{Metadata: &v1.ObjectMeta{Name: n, Namespace: "default"}, Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox"}}}})
	}
	mustCreate(t, e.c, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "other"}})
	mustCreate(t, e.c, &v1.Pod{Metadata: &v1.ObjectMeta{Name: "web-elsewhere", Namespace: "other"}, Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox"}}}})
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if r := mustOK(t, e.run("completion", sh)); !strings.Contains(r.out, "tugctl") || len(r.out) < 500 {
			t.Errorf("completion %s: %d bytes", sh, len(r.out))
		}
	}
	names := func(args ...string) string {
		r := mustOK(t, e.run(append([]string{"__complete"}, args...)...))
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(r.out), "\n") {
			if !strings.HasPrefix(l, ":") {
				out = append(out, l)
			}
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "pods", "web"}, "web-1 web-2"},
		{[]string{"get", "po", ""}, "db web-1 web-2"},
		{[]string{"get", "-n", "other", "pods", ""}, "web-elsewhere"},
		{[]string{"describe", "pod/w"}, "pod/web-1 pod/web-2"},
		{[]string{"delete", "namesp"}, "namespaces"},
		{[]string{"logs", "d"}, "db"},
		{[]string{"exec", ""}, "db web-1 web-2"},
		{[]string{"port-forward", "web-2", ""}, ""},
	} {
		if got := names(tc.args...); got != tc.want {
			t.Errorf("completing %v: %q, want %q", tc.args, got, tc.want)
		}
	}
	// api-versions: group/version, sorted, each once (the core group last, as "v1").
	r := mustOK(t, e.run("api-versions"))
	vs := strings.Split(strings.TrimSpace(r.out), "\n")
	if !slices.IsSorted(vs) || vs[0] != "apps/v1" || vs[len(vs)-1] != "v1" || !slices.Contains(vs, "rbac.authorization.k8s.io/v1") || len(slices.Compact(slices.Clone(vs))) != len(vs) {
		t.Errorf("api-versions: %q", r.out)
	}
}
