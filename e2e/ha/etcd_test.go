package ha

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver"
)

// etcdLeader returns the index of the member that leads, asking every
// member that answers (with the apiserver's etcd client certificate).
func (cp *controlPlane) etcdLeader(t *testing.T) int {
	t.Helper()
	tlsCfg, err := apiserver.EtcdClientTLS(cp.file(pki.EtcdCACert), cp.file(pki.EtcdClientCert), cp.file(pki.EtcdClientKey))
	if err != nil {
		t.Fatal(err)
	}
	var leader int
	err = wait.Until(context.Background(), 30*time.Second, func(ctx context.Context) error {
		for i, u := range cp.etcdURLs {
			if !cp.etcd[i].running() {
				continue
			}
			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{u}, TLS: tlsCfg, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			st, err := cli.Status(sctx, u)
			cancel()
			cli.Close()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				leader = i
				return nil
			}
		}
		return fmt.Errorf("no etcd member says it leads")
	})
	if err != nil {
		t.Fatal(err)
	}
	return leader
}

// TestEtcdMemberLoss: a 3-member etcd under two apiservers and 50 writes/s.
// The leading member is killed (SIGKILL), then brought back, then a
// follower is killed: writes continue on the quorum that is left, and
// every acknowledged write is stored and seen exactly once by an informer
// (through both apiservers' watch caches, whose etcd watches move to the
// members that are left).
func TestEtcdMemberLoss(t *testing.T) {
	cp := startControlPlane(t, 3, 2)
	cms := client.For[*v1.ConfigMap](cp.Client())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, inf := watchWrites(t, ctx, cms)
	w, stopWriter := startWriter(ctx, cms)
	w.waitAcks(t, 100)

	for _, which := range []string{"leader", "follower"} {
		leader := cp.etcdLeader(t)
		victim := leader
		if which == "follower" {
			victim = (leader + 1) % len(cp.etcd)
		}
		killed := time.Now()
		cp.etcd[victim].kill()
		t.Logf("killed the %s, %s", which, cp.etcd[victim].name)
		w.waitAcks(t, 100)
		w.mu.Lock()
		t.Logf("%s killed: first write acknowledged %v after, longest pause between acknowledged writes %v; %d uncertain so far",
			which, firstAfter(w.ackTimes, killed), longestGap(w.ackTimes, killed.Add(-time.Second)), w.uncertain)
		w.mu.Unlock()
		if out, err := cp.tugctl(cp.Servers(), "get", "configmaps", "-l", "e2e=ha-writes"); err != nil || !strings.Contains(out, "cm-0") {
			t.Fatalf("tugctl with an etcd member down: %v\n%s", err, out)
		}
		cp.etcd[victim].start()
		t.Logf("%s is back", cp.etcd[victim].name)
		w.waitAcks(t, 50)
	}
	stopWriter()
	checkWritesSeen(t, w, s, inf, cms)
}
