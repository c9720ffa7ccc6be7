package apiserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// probes names the ConfigMaps written to see that watches are open.
var probes int

// openWatch opens a watch of ConfigMaps on c and returns once it is
// accepted (it sees a ConfigMap written after it) or refused.
func openWatch(ctx context.Context, t *testing.T, s *apiservertest.Server, c *client.Client) (v1.Objects_WatchClient, error) {
	t.Helper()
	w, err := c.Objects().Watch(ctx, &v1.WatchRequest{Kind: "ConfigMap", Namespace: "default"})
	if err != nil {
		return nil, err
	}
	probes++
	name := fmt.Sprintf("probe-%d", probes)
	if _, err := client.For[*v1.ConfigMap](s.Client).Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	for {
		e, err := w.Recv()
		if err != nil {
			return nil, err
		}
		cm := &v1.ConfigMap{}
		if e.Object != nil && e.Object.UnmarshalTo(cm) == nil && cm.Metadata.Name == name {
			return w, nil
		}
	}
}

// TestWatchLimits: watches are capped per connection and per user, and a
// watcher that does not read is cut off before its queue holds more than
// WatchQueueBytes.
func TestWatchLimits(t *testing.T) {
	s := apiservertest.StartSecure(t, withTokens(t, "viewer", "other"), func(c *apiserver.Config) {
		c.MaxWatchesPerConnection, c.MaxWatchesPerUser = 4, 6
		c.WatchQueueBytes = 1 << 20
		c.BookmarkInterval = 100 * time.Millisecond
	})
	ctx, cancel := context.WithTimeout(ctxT(t), 60*time.Second)
	defer cancel()
	if _, err := client.For[*v1.ClusterRoleBinding](s.Client).Create(ctx, &v1.ClusterRoleBinding{Metadata: &v1.ObjectMeta{Name: "viewers"},
		Subjects: []*v1.RBACSubject{{Kind: "User", Name: "viewer"}, {Kind: "User", Name: "other"}}, RoleRef: &v1.RoleRef{Kind: "ClusterRole", Name: "view"}}); err != nil {
		t.Fatal(err)
	}
	waitAllowed(t, s, "viewer", "watch", "configmaps", "default", "")
	waitAllowed(t, s, "other", "watch", "configmaps", "default", "")

	conn1 := tokenClient(t, s, "viewer")
	var open []context.CancelFunc
	for i := range 4 {
		wctx, wcancel := context.WithCancel(ctx)
		open = append(open, wcancel)
		if _, err := openWatch(wctx, t, s, conn1); err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
	}
	_, err := openWatch(ctx, t, s, conn1)
	wantCode(t, "a 5th watch on one connection", err, codes.ResourceExhausted, "too many watches on this connection: 4 open, the limit is 4")
	conn2 := tokenClient(t, s, "viewer")
	for i := range 2 {
		if _, err := openWatch(ctx, t, s, conn2); err != nil {
			t.Fatalf("watch %d on a second connection: %v", i, err)
		}
	}
	_, err = openWatch(ctx, t, s, conn2)
	wantCode(t, "a 7th watch of one user", err, codes.ResourceExhausted, `too many watches for user "viewer": 6 open, the limit is 6`)
	// Another user is not held up by viewer's watches.
	if _, err := openWatch(ctx, t, s, tokenClient(t, s, "other")); err != nil {
		t.Errorf("another user's watch: %v", err)
	}
	// A closed watch frees its place.
	open[0]()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := openWatch(ctx, t, s, conn1)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no place after a watch closed: %v", err)
		}
	}

	// A watcher that reads nothing while 1 MiB objects are written is cut
	// off once its queue holds more than 1 MiB (after what the stream's
	// buffers take), not allowed to pin them all.
	slow, err := openWatch(ctx, t, s, tokenClient(t, s, "other"))
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 1<<20)
	cms := client.For[*v1.ConfigMap](s.Client)
	var cut error
	for i := 0; i < 64 && cut == nil; i++ {
		if _, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "big-" + strings.Repeat("a", i+1)}, Data: map[string]string{"k": big}}); err != nil {
			t.Fatal(err)
		}
		if i >= 40 {
			// Far more than any stream buffer: read what was sent.
			for {
				if _, err := slow.Recv(); err != nil {
					cut = err
					break
				}
			}
		}
	}
	wantCode(t, "a slow watcher of large objects", cut, codes.ResourceExhausted, "its queued events hold more than 1048576 bytes")
}
