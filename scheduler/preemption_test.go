package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

func priorityClass(t *testing.T, c *client.Client, name string, value int32, policy string) {
	t.Helper()
	pc := &v1.PriorityClass{Metadata: &v1.ObjectMeta{Name: name}, Value: value}
	if policy != "" {
		pc.PreemptionPolicy = proto.String(policy)
	}
	if _, err := client.For[*v1.PriorityClass](c).Create(context.Background(), pc); err != nil {
		t.Fatal(err)
	}
}

func withPriority(class string) podOpt {
	return func(p *v1.Pod) { p.Spec.PriorityClassName = class }
}

// gracefulNever: a victim without a kubelet to stop it goes at once.
func noGrace(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = proto.Int64(0) }

func onNode(n string) podOpt { return func(p *v1.Pod) { p.Spec.NodeName = n } }

// TestPreemptionPicksMinimalVictims: node-1 has three low pods of 300m,
// node-2 a low pod of 500m and a medium one of 400m; a high pod of 600m
// fits nowhere. On node-1 it would have to preempt two pods, on node-2 only
// the low one (the medium one is reprieved), so node-2 is nominated, its
// low pod deleted with a Preempted Event, and the high pod bound there.
func TestPreemptionPicksMinimalVictims(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	priorityClass(t, c, "low", 10, "")
	priorityClass(t, c, "medium", 500, "")
	priorityClass(t, c, "high", 1000, "")
	createNode(t, c, makeNode("node-1", "1", "4Gi"))
	createNode(t, c, makeNode("node-2", "1", "4Gi"))
	var pods []*v1.Pod
	for i := 0; i < 3; i++ {
		pods = append(pods, makePod(fmt.Sprintf("low-1-%d", i), "300m", "64Mi", withPriority("low"), noGrace, onNode("node-1")))
	}
	pods = append(pods,
		makePod("low-2", "500m", "64Mi", withPriority("low"), noGrace, onNode("node-2")),
		makePod("medium-2", "400m", "64Mi", withPriority("medium"), noGrace, onNode("node-2")))
	createPods(t, c, pods)
	s := startScheduler(t, srv, Config{})
	createPods(t, c, []*v1.Pod{makePod("high", "600m", "64Mi", withPriority("high"))})
	wait.Eventually(t, 30*time.Second, "the high pod bound", func() error {
		p := getPod(t, c, "high")
		if p.Spec.NodeName == "" {
			return fmt.Errorf("unbound; nominated %q, %v", p.GetStatus().GetNominatedNodeName(), podScheduledCondition(p))
		}
		return nil
	})
	p := getPod(t, c, "high")
	if p.Spec.NodeName != "node-2" || p.Status.NominatedNodeName != "node-2" {
		t.Errorf("high pod on %s, nominated %q; want node-2 for both", p.Spec.NodeName, p.Status.NominatedNodeName)
	}
	left := map[string]bool{}
	for _, q := range listPods(t, c) {
		left[q.Metadata.Name] = true
	}
	for _, name := range []string{"low-1-0", "low-1-1", "low-1-2", "medium-2"} {
		if !left[name] {
			t.Errorf("pod %s was preempted; only low-2 should be", name)
		}
	}
	if left["low-2"] {
		t.Error("low-2 was not preempted")
	}
	if got := counter(t, s.Scheduler, "tugboat_scheduler_preemptions_total", ""); got != 1 {
		t.Errorf("%v preemptions counted, want 1", got)
	}
	wait.Eventually(t, 20*time.Second, "a Preempted event on the victim", func() error {
		for _, e := range events(t, c, "low-2", "Preempted") {
			if e.Message == "Preempted by pod "+p.Metadata.Uid+" on node node-2" {
				return nil
			}
		}
		return errors.New("no Preempted event")
	})
}

// TestPreemptionNotHelping: the message says when preemption cannot help:
// preemptionPolicy Never; only equal-or-higher priority pods in the way;
// a node refused for something no deletion changes.
func TestPreemptionNotHelping(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	priorityClass(t, c, "high", 1000, "")
	priorityClass(t, c, "polite", 1000, "Never")
	createNode(t, c, makeNode("node-1", "1", "4Gi"))
	createNode(t, c, makeNode("gpu", "1", "4Gi", taint("dedicated", "gpu", "NoSchedule")))
	createPods(t, c, []*v1.Pod{makePod("busy", "800m", "64Mi", withPriority("high"), onNode("node-1"))})
	startScheduler(t, srv, Config{})
	createPods(t, c, []*v1.Pod{
		makePod("polite", "500m", "64Mi", withPriority("polite")),
		makePod("peer", "500m", "64Mi", withPriority("high")),
	})
	for name, want := range map[string]string{
		"polite": "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}. preemption: not eligible due to preemptionPolicy=Never.",
		"peer":   "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.",
	} {
		wait.Eventually(t, 20*time.Second, "pod "+name+" unschedulable with the reason", func() error {
			if got := podScheduledCondition(getPod(t, c, name)).GetMessage(); got != want {
				return fmt.Errorf("%q, want %q", got, want)
			}
			return nil
		})
	}
	if n := len(listPods(t, c)); n != 3 {
		t.Errorf("%d pods left, want 3 (nothing preempted)", n)
	}
}

// TestPreemptionMarksVictimAndKeepsRoom: the victim gets DisruptionTarget
// =True (PreemptionByScheduler) before its graceful delete; while it
// terminates (no kubelet here: it stays until force-deleted) the high pod
// waits nominated, and a medium pod that arrives meanwhile does not get
// the room once the victim is gone: the high pod is bound there and the
// medium one stays Pending with Insufficient cpu.
func TestPreemptionMarksVictimAndKeepsRoom(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	priorityClass(t, c, "low", 10, "")
	priorityClass(t, c, "medium", 500, "")
	priorityClass(t, c, "high", 1000, "")
	createNode(t, c, makeNode("node-1", "1", "4Gi"))
	createPods(t, c, []*v1.Pod{makePod("victim", "800m", "64Mi", withPriority("low"), onNode("node-1"))})
	startScheduler(t, srv, Config{})
	createPods(t, c, []*v1.Pod{makePod("high", "600m", "64Mi", withPriority("high"))})
	wait.Eventually(t, 30*time.Second, "the victim terminating with DisruptionTarget", func() error {
		v := getPod(t, c, "victim")
		if v.Metadata.DeletionTimestamp == nil {
			return errors.New("not being deleted")
		}
		for _, cond := range v.GetStatus().GetConditions() {
			if cond.Type == "DisruptionTarget" {
				if cond.Status != "True" || cond.Reason != "PreemptionByScheduler" || cond.Message != "default-scheduler: preempting to accommodate a higher priority pod" {
					return fmt.Errorf("condition %v", cond)
				}
				return nil
			}
		}
		return fmt.Errorf("no DisruptionTarget condition: %v", v.GetStatus().GetConditions())
	})
	wait.Eventually(t, 20*time.Second, "the high pod nominated to node-1", func() error {
		if got := getPod(t, c, "high").GetStatus().GetNominatedNodeName(); got != "node-1" {
			return fmt.Errorf("nominated %q", got)
		}
		return nil
	})
	createPods(t, c, []*v1.Pod{makePod("medium", "600m", "64Mi", withPriority("medium"))})
	wait.Eventually(t, 20*time.Second, "the medium pod found unschedulable", func() error {
		if podScheduledCondition(getPod(t, c, "medium")) == nil {
			return errors.New("not decided yet")
		}
		return nil
	})
	if _, err := client.For[*v1.Pod](c).Delete(context.Background(), "default", "victim", client.DeleteOptions{GracePeriodSeconds: proto.Int64(0)}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, "the high pod bound to node-1", func() error {
		if n := getPod(t, c, "high").Spec.NodeName; n != "node-1" {
			return fmt.Errorf("on %q", n)
		}
		return nil
	})
	wait.Eventually(t, 20*time.Second, "the medium pod Pending for cpu", func() error {
		p := getPod(t, c, "medium")
		if p.Spec.NodeName != "" {
			return fmt.Errorf("bound to %s: it took the room kept for the high pod", p.Spec.NodeName)
		}
		if msg := podScheduledCondition(p).GetMessage(); !strings.HasPrefix(msg, "0/1 nodes are available: 1 Insufficient cpu.") {
			return fmt.Errorf("message %q", msg)
		}
		return nil
	})
}
