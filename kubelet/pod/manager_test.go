package pod

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

func (e *testEnv) apiPod(name string) *v1.Pod {
	p, err := e.api.Get(context.Background(), "default", name)
	if err != nil {
		return nil
	}
	return p
}

// TestManagerRunsWorkers drives the Manager as the kubelet does: pods
// handed in before Run, statuses written to the API in the background, a
// graceful deletion finished with a delete from the API.
func TestManagerRunsWorkers(t *testing.T) {
	e := newTestEnv(t)
	e.m.cfg.RelistInterval = 10 * time.Millisecond
	pod := newPod("managed", "app")
	e.api.pods["default/managed"] = proto.Clone(pod).(*v1.Pod)
	e.m.UpdatePod(pod)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.m.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	wait.Eventually(t, 5*time.Second, "Running in the API", func() error {
		if p := e.apiPod("managed"); p.GetStatus().GetPhase() != PhaseRunning {
			return fmt.Errorf("the API has %v", p.GetStatus())
		}
		return nil
	})

	// A container exit is noticed by the relist and restarts it.
	e.rt.exit("app", 1, "")
	wait.Eventually(t, 5*time.Second, "a restart", func() error {
		if cs := e.apiPod("managed").GetStatus().GetContainerStatuses(); len(cs) != 1 || cs[0].RestartCount != 1 {
			return fmt.Errorf("container statuses %v", cs)
		}
		return nil
	})

	// Graceful deletion: the kubelet finishes it.
	deleting := e.apiPod("managed")
	deleting.Metadata.DeletionTimestamp = timestamppb.Now()
	deleting.Metadata.DeletionGracePeriodSeconds = 1
	e.m.UpdatePod(deleting)
	wait.Eventually(t, 5*time.Second, "the pod deleted from the API", func() error {
		if p := e.apiPod("managed"); p != nil {
			return fmt.Errorf("the API still has it: %v", p.GetMetadata())
		}
		return nil
	})
	wait.Eventually(t, 5*time.Second, "the worker gone", func() error {
		if e.m.active(pod.Metadata.Uid) {
			return errors.New("the worker is still running")
		}
		return nil
	})
	if len(e.rt.sandboxes) != 0 {
		t.Errorf("sandboxes left: %v", e.rt.sandboxes)
	}
}

// TestStatusWriteGuardsUID: a status for an old pod is never written to a
// new pod of the same name.
func TestStatusWriteGuardsUID(t *testing.T) {
	e := newTestEnv(t)
	old := newPod("same", "app")
	e.api.pods["default/same"] = proto.Clone(old).(*v1.Pod)
	// The pod is replaced by another with the same name.
	fresh := newPod("same", "app")
	fresh.Metadata.Uid = "uid-new"
	fresh.Metadata.ResourceVersion = 7
	e.api.pods["default/same"] = fresh
	_, err := e.m.status.write(context.Background(), &statusEntry{pod: old, status: &v1.PodStatus{Phase: PhaseFailed}}, 1)
	if !errGone(err) {
		t.Fatalf("write = %v, want gone", err)
	}
	if e.api.pods["default/same"].Status.GetPhase() == PhaseFailed {
		t.Fatal("the new pod got the old pod's status")
	}
}
