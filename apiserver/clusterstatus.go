package apiserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/componentstatus"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The cluster status (Cluster.Status, tugctl get componentstatuses,
// kubectl get cs) is computed on each call by the apiserver that answers,
// never stored (Kubernetes' ComponentStatus is the same: a read-only list
// the apiserver builds by probing): every apiserver from the identity
// Leases (identitylease.go), every etcd member as this apiserver's etcd
// client sees it — the member list, then each member's own Status call
// (leader, raft index and term, database size), a member that does not
// answer within etcdStatusTimeout is unhealthy with the error — and the
// holders of the scheduler's and controller-manager's Leases.

// etcdStatusTimeout bounds each etcd call of a status request, so one dead
// member costs at most this much.
const etcdStatusTimeout = 3 * time.Second

// leaderLeases are the leader-elected components' Leases in kube-system.
var leaderLeases = []string{"scheduler", "controller-manager"}

type clusterService struct {
	v1.UnimplementedClusterServer
	s *Server
}

// Status implements Cluster.Status: the whole status is a list of
// componentstatuses, one component a get of it (as kube-apiserver
// authorizes kubectl get cs and kubectl get cs NAME).
func (c *clusterService) Status(ctx context.Context, req *v1.ClusterStatusRequest) (*v1.ClusterStatus, error) {
	name := req.GetName()
	verb := "list"
	if name != "" {
		verb = "get"
	}
	if err := c.s.authorizeVirtual(ctx, verb, "componentstatuses", name, ""); err != nil {
		return nil, err
	}
	st, err := c.s.clusterStatus(ctx)
	if err != nil || name == "" {
		return st, err
	}
	if one := componentstatus.Only(st, name); one != nil {
		return one, nil
	}
	return nil, apierrors.New(apierrors.ErrNotFound, "componentstatuses %q not found", name)
}

func (s *Server) clusterStatus(ctx context.Context) (*v1.ClusterStatus, error) {
	st := &v1.ClusterStatus{AnsweredBy: s.identity.name}
	st.EtcdMembers = s.etcdStatus(ctx)
	leases, err := s.identityLeases(ctx)
	if err != nil {
		// Without etcd there is nothing more to say than what the members
		// said: this apiserver is the one answering.
		st.Apiservers = []*v1.APIServerStatus{{Name: s.identity.name, Address: s.identity.address, Healthy: false, Error: "reading the identity Leases: " + err.Error()}}
		return st, nil
	}
	now := time.Now()
	for _, l := range leases {
		a := &v1.APIServerStatus{Name: l.GetMetadata().GetName(), Address: l.GetMetadata().GetAnnotations()[addressAnnotation], RenewTime: l.GetSpec().GetRenewTime()}
		a.Healthy, a.Error = leaseFresh(l.GetSpec(), now)
		st.Apiservers = append(st.Apiservers, a)
	}
	sort.Slice(st.Apiservers, func(i, j int) bool { return st.Apiservers[i].Address < st.Apiservers[j].Address })
	k, _ := kinds.Lookup("Lease")
	for _, name := range leaderLeases {
		ls := &v1.LeaderStatus{Component: name, Lease: "kube-system/" + name}
		obj, err := s.store.Get(ctx, k, "kube-system", name)
		switch {
		case apierrors.IsNotFound(err):
			ls.Error = "no Lease: no " + name + " has run"
		case err != nil:
			ls.Error = err.Error()
		default:
			spec := obj.(*v1.Lease).GetSpec()
			ls.Holder, ls.RenewTime = spec.GetHolderIdentity(), spec.GetRenewTime()
			ls.Healthy, ls.Error = leaseFresh(spec, now)
		}
		st.Leaders = append(st.Leaders, ls)
	}
	return st, nil
}

// leaseFresh: held and renewed within its duration, else why not.
func leaseFresh(spec *v1.LeaseSpec, now time.Time) (bool, string) {
	if spec.GetHolderIdentity() == "" {
		return false, "not held"
	}
	if spec.GetRenewTime() == nil {
		return false, "never renewed"
	}
	d := time.Duration(spec.GetLeaseDurationSeconds()) * time.Second
	if ago := now.Sub(spec.GetRenewTime().AsTime()); ago > d {
		return false, fmt.Sprintf("not renewed for %s (lease duration %s)", ago.Round(time.Second), d)
	}
	return true, ""
}

// etcdStatus asks the member list, then each member, in parallel. When
// the member list fails (no quorum), the client's endpoints are asked
// one by one instead, each named by its URL.
func (s *Server) etcdStatus(ctx context.Context) []*v1.EtcdMemberStatus {
	var out []*v1.EtcdMemberStatus
	lctx, cancel := context.WithTimeout(ctx, etcdStatusTimeout)
	list, err := s.etcdCli.MemberList(lctx)
	cancel()
	if err == nil {
		for _, m := range list.Members {
			urls := m.ClientURLs
			if s.etcd != nil {
				// The embedded member advertises a placeholder (etcd.go):
				// it is reached on the client's endpoint.
				urls = s.etcdCli.Endpoints()
			}
			out = append(out, &v1.EtcdMemberStatus{Name: m.Name, Id: fmt.Sprintf("%x", m.ID), ClientUrls: urls})
		}
	} else {
		for _, ep := range s.etcdCli.Endpoints() {
			out = append(out, &v1.EtcdMemberStatus{Name: ep, ClientUrls: []string{ep}, Error: "member list: " + err.Error()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	var wg sync.WaitGroup
	for _, m := range out {
		if len(m.ClientUrls) == 0 {
			m.Error = "the member has no client URL (not started yet)"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, etcdStatusTimeout)
			defer cancel()
			r, err := s.etcdCli.Status(sctx, m.ClientUrls[0])
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					err = fmt.Errorf("no answer within %s", etcdStatusTimeout)
				}
				m.Error = strings.TrimPrefix(strings.TrimSpace(m.Error+"; "+err.Error()), "; ")
				return
			}
			id := fmt.Sprintf("%x", r.Header.GetMemberId())
			if m.Id == "" {
				m.Id = id
			}
			m.Leader = r.Leader != 0 && r.Leader == r.Header.GetMemberId()
			m.RaftIndex, m.RaftTerm, m.DbSize, m.Version = r.RaftIndex, r.RaftTerm, r.DbSize, r.Version
			problems := append([]string(nil), r.Errors...)
			if r.Leader == 0 {
				problems = append(problems, "no leader")
			}
			m.Healthy, m.Error = len(problems) == 0, strings.Join(problems, "; ")
		}()
	}
	wg.Wait()
	return out
}
