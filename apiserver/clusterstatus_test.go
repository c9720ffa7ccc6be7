package apiserver_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// etcdCluster is n of Debian's etcd processes forming one cluster on
// loopback, with client-certificate TLS and peer TLS from pki.InitEtcd, as
// hack/ha-up.sh runs it.
type etcdCluster struct {
	etcdProcess
	URLs  []string
	procs []*exec.Cmd
}

func startEtcdCluster(t *testing.T, n int) *etcdCluster {
	t.Helper()
	bin := etcdBinary(t)
	dir := t.TempDir()
	c := &etcdCluster{etcdProcess: etcdProcess{PKIDir: filepath.Join(dir, "pki")}}
	if err := pki.InitEtcd(pki.InitOptions{Dir: c.PKIDir}); err != nil {
		t.Fatal(err)
	}
	var peers, initial []string
	for i := 0; i < n; i++ {
		c.URLs = append(c.URLs, fmt.Sprintf("https://127.0.0.1:%d", freePort(t)))
		peers = append(peers, fmt.Sprintf("https://127.0.0.1:%d", freePort(t)))
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i]))
	}
	for i := 0; i < n; i++ {
		cmd := exec.Command(bin, "--name", fmt.Sprintf("m%d", i), "--data-dir", filepath.Join(dir, fmt.Sprintf("data%d", i)),
			"--listen-client-urls", c.URLs[i], "--advertise-client-urls", c.URLs[i],
			"--cert-file", c.file(pki.EtcdServerCert), "--key-file", c.file(pki.EtcdServerKey),
			"--trusted-ca-file", c.file(pki.EtcdCACert), "--client-cert-auth",
			"--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
			"--peer-cert-file", c.file(pki.EtcdPeerCert), "--peer-key-file", c.file(pki.EtcdPeerKey),
			"--peer-trusted-ca-file", c.file(pki.EtcdCACert), "--peer-client-cert-auth",
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-token", "t",
			"--log-level", "error")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c.procs = append(c.procs, cmd)
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	return c
}

// Use points an apiserver config at every member.
func (c *etcdCluster) Use(t *testing.T) apiservertest.Option {
	tlsCfg := c.TLS(t)
	return func(cfg *apiserver.Config) { cfg.EtcdServers = c.URLs; cfg.DataDir = ""; cfg.EtcdTLS = tlsCfg }
}

// kill stops member i (SIGKILL).
func (c *etcdCluster) kill(t *testing.T, i int) {
	t.Helper()
	if err := c.procs[i].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.procs[i].Wait()
}

// TestClusterStatusOnThreeMembers: the status of an apiserver on a real
// 3-member etcd names the three members, exactly one of them the leader,
// each with its raft index and database size; this apiserver by its
// identity Lease; the scheduler's leader by its Lease (and a missing
// controller-manager Lease as unhealthy). With the leading member killed,
// the status still answers, reports that member unhealthy with its error
// and a new leader among the other two. A user without get on
// componentstatuses is refused.
func TestClusterStatusOnThreeMembers(t *testing.T) {
	etcd := startEtcdCluster(t, 3)
	s := apiservertest.StartSecure(t, etcd.Use(t), withTokens(t, "nobody"))
	ctx := ctxT(t)
	cs := v1.NewClusterClient(s.Client.Conn())
	now := timestamppb.Now()
	if _, err := client.For[*v1.Lease](s.Client).Create(ctx, &v1.Lease{Metadata: &v1.ObjectMeta{Name: "scheduler", Namespace: "kube-system"},
		Spec: &v1.LeaseSpec{HolderIdentity: "sched-a_1", LeaseDurationSeconds: 300, AcquireTime: now, RenewTime: now}}); err != nil {
		t.Fatal(err)
	}

	var st *v1.ClusterStatus
	leader := -1
	wait.Eventually(t, 60*time.Second, "3 healthy members, one leader, this apiserver listed", func() error {
		var err error
		if st, err = cs.Status(ctx, &v1.ClusterStatusRequest{}); err != nil {
			return err
		}
		if len(st.EtcdMembers) != 3 {
			return fmt.Errorf("%d members: %v", len(st.EtcdMembers), st.EtcdMembers)
		}
		leaders := 0
		for i, m := range st.EtcdMembers {
			if !m.Healthy || m.RaftIndex == 0 || m.DbSize == 0 || m.Id == "" || len(m.ClientUrls) != 1 {
				return fmt.Errorf("member %d: %v", i, m)
			}
			if m.Leader {
				leaders++
				leader = indexOf(etcd.URLs, m.ClientUrls[0])
			}
		}
		if leaders != 1 || leader < 0 {
			return fmt.Errorf("%d leaders (at %d): %v", leaders, leader, st.EtcdMembers)
		}
		if len(st.Apiservers) != 1 || !st.Apiservers[0].Healthy || st.Apiservers[0].Name != st.AnsweredBy || st.Apiservers[0].Address != s.Addr() {
			return fmt.Errorf("apiservers %v (answered by %s, listening on %s)", st.Apiservers, st.AnsweredBy, s.Addr())
		}
		return nil
	})
	t.Logf("members: %v", st.EtcdMembers)
	byName := map[string]*v1.LeaderStatus{}
	for _, l := range st.Leaders {
		byName[l.Component] = l
	}
	if l := byName["scheduler"]; l == nil || !l.Healthy || l.Holder != "sched-a_1" || l.Lease != "kube-system/scheduler" {
		t.Errorf("scheduler leader: %v", l)
	}
	if l := byName["controller-manager"]; l == nil || l.Healthy || !strings.Contains(l.Error, "no Lease") {
		t.Errorf("controller-manager (no Lease): %v", l)
	}

	// The leader dies: two members keep a quorum; the dead one is named
	// unhealthy with why, another leads.
	etcd.kill(t, leader)
	dead := etcd.URLs[leader]
	wait.Eventually(t, 60*time.Second, "the killed member unhealthy, a new leader", func() error {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		var err error
		if st, err = cs.Status(sctx, &v1.ClusterStatusRequest{}); err != nil {
			return err
		}
		if len(st.EtcdMembers) != 3 {
			return fmt.Errorf("%d members: %v", len(st.EtcdMembers), st.EtcdMembers)
		}
		newLeader := ""
		for _, m := range st.EtcdMembers {
			switch {
			case m.ClientUrls[0] == dead:
				if m.Healthy || m.Leader || m.Error == "" {
					return fmt.Errorf("killed member %v", m)
				}
			case !m.Healthy:
				return fmt.Errorf("live member unhealthy: %v", m)
			case m.Leader:
				newLeader = m.Name
			}
		}
		if newLeader == "" {
			return fmt.Errorf("no leader among the live members: %v", st.EtcdMembers)
		}
		return nil
	})
	t.Logf("after killing %s: %v", dead, st.EtcdMembers)

	// get on componentstatuses is needed.
	_, err := v1.NewClusterClient(tokenClient(t, s, "nobody").Conn()).Status(ctx, &v1.ClusterStatusRequest{})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "componentstatuses") {
		t.Errorf("nobody's cluster status: %v, want PermissionDenied naming componentstatuses", err)
	}
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
