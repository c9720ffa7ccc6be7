package remote

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// TestReattachMessage: kubectl's note after an interactive session, for
// a container and for an ephemeral one.
func TestReattachMessage(t *testing.T) {
	p := &v1.Pod{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "app"}}, EphemeralContainers: []*v1.EphemeralContainer{{Name: "debugger-x"}}}}
	for c, want := range map[string]string{
		"app":        "Session ended, resume using 'tugctl attach web -c app -n shop -i -t' command",
		"debugger-x": "Session ended, the ephemeral container will not be restarted but may be reattached using 'tugctl attach web -c debugger-x -n shop -i -t' if it is still running",
	} {
		if got := reattachMessage(p, c); got != want {
			t.Errorf("reattachMessage(%s) = %q, want %q", c, got, want)
		}
	}
}
