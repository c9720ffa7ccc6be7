package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/api/tunnel"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// joinToken makes a join token through the API, as tugctl token create.
func joinToken(t *testing.T, s *apiservertest.Server, replace string) string {
	t.Helper()
	r, err := v1.NewAuthClient(s.Client.Conn()).CreateToken(ctxT(t), &v1.CreateTokenRequest{Type: "join", TtlSeconds: 3600, ReplaceNode: replace})
	if err != nil {
		t.Fatal(err)
	}
	return r.Token
}

// joined is a node certificate obtained by JoinNode, written to files.
type joined struct {
	cert, key string
}

func join(t *testing.T, s *apiservertest.Server, token, node string) (*joined, error) {
	t.Helper()
	key, _ := pki.NewKey()
	csr, err := pki.NewCSR(key, pki.Subject{User: "system:node:" + node, Groups: []string{"system:nodes"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := v1.NewAuthClient(s.ClientAs("").Conn()).JoinNode(ctxT(t), &v1.JoinNodeRequest{Token: token, NodeName: node, Csr: csr})
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	keyPEM, _ := pki.KeyPEM(key)
	j := &joined{cert: filepath.Join(dir, "node.crt"), key: filepath.Join(dir, "node.key")}
	if err := os.WriteFile(j.cert, resp.Certificate, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(j.key, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return j, nil
}

func (j *joined) client(t *testing.T, s *apiservertest.Server) *client.Client {
	t.Helper()
	return certClient(t, s, filepath.Join(s.PKIDir, "ca.crt"), j.cert, j.key)
}

// certClient is a client of s trusting caFile and presenting cert and key.
func certClient(t *testing.T, s *apiservertest.Server, caFile, cert, key string) *client.Client {
	t.Helper()
	tlsCfg, err := client.TLSFromFiles(caFile, cert, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Server: s.Addr(), TLS: tlsCfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readLogs reads a Logs stream to its end.
func readLogs(t *testing.T, ls v1.NodeAPI_LogsClient) string {
	t.Helper()
	var got []byte
	for {
		c, err := ls.Recv()
		if errors.Is(err, io.EOF) {
			return string(got)
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.Data...)
	}
}

// heartbeat is what a running kubelet leaves: its Node and a fresh Lease.
func heartbeat(t *testing.T, c *client.Client, node string) {
	t.Helper()
	ctx := ctxT(t)
	if _, err := client.For[*v1.Node](c).Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: node}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	d := int32(40)
	if _, err := client.For[*v1.Lease](c).Create(ctx, &v1.Lease{Metadata: &v1.ObjectMeta{Name: node, Namespace: "kube-node-lease"},
		Spec: &v1.LeaseSpec{HolderIdentity: node, LeaseDurationSeconds: d, RenewTime: timestamppb.Now()}}); err != nil {
		t.Fatal(err)
	}
}

// TestJoinRefusesHeldNamesAndBadNames: a join may not take the name of a
// node with a live Lease or certificate unless its token was made to
// replace it (which revokes the old certificates); node names are DNS-1123
// subdomains; a refused join does not spend its token.
func TestJoinRefusesHeldNamesAndBadNames(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx := ctxT(t)
	tok := joinToken(t, s, "")
	for _, name := range []string{"NODE-UPPER", "a/b/../c", strings.Repeat("n", 300), "nöde", "x,O=system:masters", "n1\nn2", ""} {
		_, err := join(t, s, tok, name)
		wantCode(t, fmt.Sprintf("join as %q", name), err, codes.InvalidArgument, "nodeName")
	}
	// n1 runs (its kubelet's certificate is from pki init): a live Lease.
	heartbeat(t, s.ClientAs("node-n1"), "n1")
	_, err := join(t, s, tok, "n1")
	wantCode(t, "impostor join of a running node", err, codes.AlreadyExists, `node "n1" is held by a running node: its Lease was renewed`)
	if err != nil && !strings.Contains(err.Error(), "tugctl token create --replace n1") {
		t.Errorf("the refusal says how to replace a node: %v", err)
	}
	// The token was not spent by the refusals: it joins a free name.
	first, err := join(t, s, tok, "n3")
	if err != nil {
		t.Fatalf("join n3: %v", err)
	}
	if who, err := v1.NewAuthClient(first.client(t, s).Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{}); err != nil || who.Name != "system:node:n3" {
		t.Fatalf("n3's certificate: %v %v", who, err)
	}
	// n3 has not even registered, but holds a live certificate.
	_, err = join(t, s, joinToken(t, s, ""), "n3")
	wantCode(t, "second join of n3", err, codes.AlreadyExists, `node "n3" holds a live certificate (serial`)
	// A token made to replace n3 may, and revokes the first certificate.
	if _, err := join(t, s, joinToken(t, s, "n3"), "n4"); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), `was made to replace node "n3", not to join "n4"`) {
		t.Errorf("a replace token used for another name: %v", err)
	}
	second, err := join(t, s, joinToken(t, s, "n3"), "n3")
	if err != nil {
		t.Fatalf("replacing n3: %v", err)
	}
	_, err = v1.NewAuthClient(first.client(t, s).Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{})
	wantCode(t, "the replaced machine's certificate", err, codes.Unauthenticated, "is revoked")
	if who, err := v1.NewAuthClient(second.client(t, s).Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{}); err != nil || who.Name != "system:node:n3" {
		t.Errorf("the replacement's certificate: %v %v", who, err)
	}
	// Only who may delete the node may make a token replacing it.
	_, err = v1.NewAuthClient(s.ClientAs("scheduler").Conn()).CreateToken(ctx, &v1.CreateTokenRequest{Type: "join", ReplaceNode: "n1"})
	wantCode(t, "replace token by the scheduler", err, codes.PermissionDenied, "cannot create")
}

// TestRenewalBounded: only node certificates renew through the API, only
// while their Node exists.
func TestRenewalBounded(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx := ctxT(t)
	renew := func(c *client.Client, user string, groups ...string) error {
		key, _ := pki.NewKey()
		csr, _ := pki.NewCSR(key, pki.Subject{User: user, Groups: groups})
		_, err := v1.NewAuthClient(c.Conn()).RenewCertificate(ctx, &v1.RenewCertificateRequest{Csr: csr})
		return err
	}
	wantCode(t, "admin renews", renew(s.Client, "admin", "system:masters"), codes.PermissionDenied, "only node certificates are renewed through the API")
	wantCode(t, "scheduler renews", renew(s.ClientAs("scheduler"), "system:kube-scheduler"), codes.PermissionDenied, "only node certificates")
	n2 := s.ClientAs("node-n2")
	wantCode(t, "a node that does not exist renews", renew(n2, "system:node:n2", "system:nodes"), codes.PermissionDenied, `node "n2" does not exist`)
	if _, err := client.For[*v1.Node](n2).Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: "n2"}}); err != nil {
		t.Fatal(err)
	}
	if err := renew(n2, "system:node:n2", "system:nodes"); err != nil {
		t.Errorf("n2 renewing while its Node exists: %v", err)
	}
	wantCode(t, "a CSR for another node", renew(n2, "system:node:n1", "system:nodes"), codes.PermissionDenied, "this request may only get")
	// The renewed certificate is recorded: n2's name is now held.
	_, err := join(t, s, joinToken(t, s, ""), "n2")
	wantCode(t, "join of a renewed node", err, codes.AlreadyExists, "holds a live certificate")
}

// tunnelEnd answers Logs with its name, to tell two kubelets apart.
type tunnelEnd struct {
	v1.UnimplementedNodeAPIServer
	who string
}

func (e tunnelEnd) Logs(_ *v1.LogsRequest, s v1.NodeAPI_LogsServer) error {
	return s.Send(&v1.LogsChunk{Data: []byte(e.who)})
}

// TestSecondTunnelRefused: a node's second tunnel does not replace a first
// that still answers, so a user's exec or logs keep going to the real
// kubelet.
func TestSecondTunnelRefused(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx := ctxT(t)
	real := grpc.NewServer()
	v1.RegisterNodeAPIServer(real, tunnelEnd{who: "real"})
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go tunnel.Serve(tctx, s.ClientAs("node-n1"), "n1", real, nil)
	wait.Eventually(t, 30*time.Second, "the tunnel of n1", func() error {
		if nodes := s.Tunnels().Nodes(); len(nodes) != 1 {
			return fmt.Errorf("tunnels from %v", nodes)
		}
		return nil
	})
	// Another connection with n1's credentials opens a second tunnel.
	st, err := v1.NewNodeTunnelClient(s.ClientAs("node-n1").Conn()).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&v1.TunnelFrame{NodeName: "n1"}); err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv()
	wantCode(t, "second tunnel", err, codes.AlreadyExists, `node "n1" already has a live tunnel`)
	// A tunnel for a bad name is refused as such.
	bad, _ := v1.NewNodeTunnelClient(s.ClientAs("node-n1").Conn()).Connect(ctx)
	_ = bad.Send(&v1.TunnelFrame{NodeName: "N1/../n2"})
	_, err = bad.Recv()
	wantCode(t, "tunnel for a bad name", err, codes.InvalidArgument, "nodeName")

	if _, err := client.For[*v1.Pod](s.Client).Create(ctx, newPod("web", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.Bind(ctx, "default", "web", "n1", 0); err != nil {
		t.Fatal(err)
	}
	ls, err := v1.NewNodeAPIClient(s.Client.Conn()).Logs(ctx, &v1.LogsRequest{Pod: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if got := readLogs(t, ls); got != "real" {
		t.Fatalf("logs came from %q", got)
	}
}

// TestNodeSelfRestriction: a node may not give itself restricted labels
// or a pod CIDR, nor change its taints; the pod CIDR, once set by the IPAM
// controller (or an admin), does not change.
func TestNodeSelfRestriction(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx := ctxT(t)
	nodes := client.For[*v1.Node](s.ClientAs("node-n1"))
	mk := func(labels map[string]string, cidr string) *v1.Node {
		return &v1.Node{Metadata: &v1.ObjectMeta{Name: "n1", Labels: labels}, Spec: &v1.NodeSpec{PodCidr: cidr}}
	}
	_, err := nodes.Create(ctx, mk(map[string]string{"node-role.kubernetes.io/control-plane": ""}, ""))
	wantCode(t, "register as control plane", err, codes.PermissionDenied, "is not allowed to set the following labels: node-role.kubernetes.io/control-plane")
	_, err = nodes.Create(ctx, mk(map[string]string{"node-restriction.kubernetes.io/pci": "yes"}, ""))
	wantCode(t, "register with a node-restriction label", err, codes.PermissionDenied, "node-restriction.kubernetes.io/pci")
	_, err = nodes.Create(ctx, mk(nil, "10.244.5.0/24"))
	wantCode(t, "register with a pod CIDR", err, codes.PermissionDenied, "is not allowed to set spec.podCIDR")
	if _, err := nodes.Create(ctx, mk(map[string]string{"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux", "node.kubernetes.io/exclude-from-external-load-balancers": "", "example.com/rack": "4"}, "")); err != nil {
		t.Fatalf("register with a kubelet's labels: %v", err)
	}
	_, err = nodes.Mutate(ctx, "", "n1", false, func(n *v1.Node) error { n.Metadata.Labels["node-role.kubernetes.io/master"] = ""; return nil })
	wantCode(t, "add a role label", err, codes.PermissionDenied, "is not allowed to modify the following labels: node-role.kubernetes.io/master")
	_, err = nodes.Mutate(ctx, "", "n1", false, func(n *v1.Node) error { delete(n.Metadata.Labels, "kubernetes.io/os"); return nil })
	if err != nil {
		t.Errorf("a node may change its own kubelet labels: %v", err)
	}
	_, err = nodes.Mutate(ctx, "", "n1", false, func(n *v1.Node) error { n.Spec.PodCidr = "10.244.5.0/24"; return nil })
	wantCode(t, "set its own pod CIDR", err, codes.PermissionDenied, "is not allowed to set spec.podCIDR")
	_, err = nodes.Mutate(ctx, "", "n1", false, func(n *v1.Node) error { n.Spec.Taints = nil; return nil })
	if err != nil {
		t.Errorf("an unchanged taint list: %v", err)
	}
	// An admin taints the node; the node cannot lift it.
	if _, err := client.For[*v1.Node](s.Client).Mutate(ctx, "", "n1", false, func(n *v1.Node) error {
		n.Spec.Taints = []*v1.Taint{{Key: "quarantine", Effect: "NoSchedule"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_, err = nodes.Mutate(ctx, "", "n1", false, func(n *v1.Node) error { n.Spec.Taints = nil; return nil })
	wantCode(t, "lift its own taint", err, codes.PermissionDenied, "is not allowed to modify taints")
	// The IPAM controller (the controller-manager) sets the pod CIDR; then
	// nobody changes it.
	cm := client.For[*v1.Node](s.ClientAs("controller-manager"))
	if _, err := cm.Mutate(ctx, "", "n1", false, func(n *v1.Node) error {
		n.Spec.PodCidr, n.Spec.PodCidrs = "10.244.1.0/24", []string{"10.244.1.0/24"}
		return nil
	}); err != nil {
		t.Fatalf("node IPAM setting the pod CIDR: %v", err)
	}
	_, err = client.For[*v1.Node](s.Client).Mutate(ctx, "", "n1", false, func(n *v1.Node) error {
		n.Spec.PodCidr, n.Spec.PodCidrs = "10.244.2.0/24", []string{"10.244.2.0/24"}
		return nil
	})
	wantCode(t, "change a set pod CIDR", err, codes.InvalidArgument, "node updates may not change podCIDR")
	// The node may still write its status.
	if _, err := nodes.Mutate(ctx, "", "n1", true, func(n *v1.Node) error {
		n.Status = &v1.NodeStatus{Capacity: map[string]string{"cpu": "2"}}
		return nil
	}); err != nil {
		t.Errorf("own status: %v", err)
	}
}
