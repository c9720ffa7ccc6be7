package apiserver_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// probes names the ConfigMaps written to see that watches are open.
var probes int

// openWatch opens a watch of ConfigMaps on c and returns once it is
// accepted (it sees a ConfigMap written after it) or refused.
//
// A watch from "now" starts when the server registers it, which the
// client does not see: the stream is open before the server's handler
// runs, so a ConfigMap written right after Watch returns may come before
// the watch starts and never reach it. So a probe is written again every
// probeInterval until the watch sees one (or fails); what is checked does
// not depend on how fast the server is.
func openWatch(ctx context.Context, t *testing.T, s *apiservertest.Server, c *client.Client) (v1.Objects_WatchClient, error) {
	t.Helper()
	w, err := c.Objects().Watch(ctx, &v1.WatchRequest{Kind: "ConfigMap", Namespace: "default"})
	if err != nil {
		return nil, err
	}
	probes++
	prefix := fmt.Sprintf("probe-%d-", probes)
	seen := make(chan error, 1)
	go func() { // ends at the first probe or error: then nothing reads w
		for {
			e, err := w.Recv()
			if err != nil {
				seen <- err
				return
			}
			cm := &v1.ConfigMap{}
			if e.Object != nil && e.Object.UnmarshalTo(cm) == nil && strings.HasPrefix(cm.Metadata.Name, prefix) {
				seen <- nil
				return
			}
		}
	}()
	const probeInterval = 500 * time.Millisecond
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	for i := 0; ; i++ {
		if _, err := client.For[*v1.ConfigMap](s.Client).Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: prefix + strconv.Itoa(i)}}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-seen:
			if err != nil {
				return nil, err
			}
			return w, nil
		case <-tick.C:
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
	wait.Eventually(t, 30*time.Second, "a place after a watch closed", func() error {
		_, err := openWatch(ctx, t, s, conn1)
		return err
	})

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
