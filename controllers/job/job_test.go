package job_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/garbagecollector"
	"github.com/tugboat/tugboat/controllers/job"
)

// exitAnnotation on a pod template says with which code the fake
// kubelet's containers exit; without it the pod runs until deleted.
const exitAnnotation = "test.tugboat.io/exit-code"

type env struct {
	ctx  context.Context
	c    *client.Client
	jobs *client.Typed[*v1.Job]
	pods *client.Typed[*v1.Pod]
}

// start runs an apiserver, a fake cluster, the Job controller and the
// garbage collector, shared by the subtests of TestJob (each in a
// namespace of its own).
func start(t *testing.T) *env {
	t.Helper()
	{
		s := apiservertest.Start(t)
		ctx := controllertest.Context(t, 3*time.Minute)
		d := controllertest.Deps(ctx, s.Client)
		jc, err := job.New(d, job.Config{PodBackoff: 20 * time.Millisecond, PodBackoffMax: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		gc, err := garbagecollector.New(d, garbagecollector.Config{Kinds: []string{"Job", "Pod"}})
		if err != nil {
			t.Fatal(err)
		}
		controllertest.StartCluster(t, s.Client, controllertest.ClusterOptions{Nodes: []string{"n1", "n2"},
			Exit: func(p *v1.Pod) (int32, bool) {
				v, ok := p.GetMetadata().GetAnnotations()[exitAnnotation]
				n, _ := strconv.Atoi(v)
				return int32(n), ok
			}})
		controllertest.RunAll(ctx, t, d.Informers, jc, gc)
		return &env{ctx: ctx, c: s.Client, jobs: client.For[*v1.Job](s.Client), pods: client.For[*v1.Pod](s.Client)}
	}
}

// ns makes a namespace for one subtest.
func (e *env) ns(t *testing.T, name string) {
	t.Helper()
	if _, err := client.For[*v1.Namespace](e.c).Create(e.ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// TestJob runs the Job controller's cases in parallel on one cluster.
func TestJob(t *testing.T) {
	e := start(t)
	for _, c := range []struct {
		name string
		fn   func(*testing.T, *env)
	}{
		{"CompletionsAndParallelism", testCompletionsAndParallelism},
		{"BackoffLimitExceeded", testBackoffLimitExceeded},
		{"Indexed", testIndexed},
		{"PodFailurePolicy", testPodFailurePolicy},
		{"ActiveDeadline", testActiveDeadline},
		{"SuspendAndResume", testSuspendAndResume},
		{"TTLAfterFinished", testTTLAfterFinished},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, e)
		})
	}
}

// newJob is the Kubernetes docs' pi Job, with a busybox computation.
func newJob(ns, name string, exitCode string) *v1.Job {
	ann := map[string]string{}
	if exitCode != "" {
		ann[exitAnnotation] = exitCode
	}
	return &v1.Job{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: ns},
		Spec: &v1.JobSpec{
			BackoffLimit: proto.Int32(4),
			Template: &v1.PodTemplateSpec{
				Metadata: &v1.ObjectMeta{Annotations: ann},
				Spec: &v1.PodSpec{RestartPolicy: "Never", Containers: []*v1.Container{{Name: "pi", Image: "tugboat.local/busybox:latest",
					Command: []string{"sh", "-c", "echo 'scale=100; 4*a(1)' | bc -l 2>/dev/null || echo 3.14159"}}}},
			},
		},
	}
}

func (e *env) create(t *testing.T, j *v1.Job) *v1.Job {
	t.Helper()
	out, err := e.jobs.Create(e.ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitCondition waits until the Job has condition typ True and returns it.
func (e *env) waitCondition(t *testing.T, ns, name, typ string) *v1.Job {
	t.Helper()
	var j *v1.Job
	wait.Eventually(t, 30*time.Second, fmt.Sprintf("job %s/%s condition %s", ns, name, typ), func() error {
		var err error
		if j, err = e.jobs.Get(e.ctx, ns, name); err != nil {
			return err
		}
		if c := controller.GetCondition(j.GetStatus().GetConditions(), typ); c != nil && c.Status == "True" {
			return nil
		}
		return fmt.Errorf("status %v", j.GetStatus())
	})
	return j
}

func (e *env) jobPods(t *testing.T, j *v1.Job) []*v1.Pod {
	t.Helper()
	list, _, err := e.pods.List(e.ctx, client.ListOptions{Namespace: j.Metadata.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	var out []*v1.Pod
	for _, p := range list {
		if ref := controller.ControllerRef(p.Metadata); ref != nil && ref.Uid == j.Metadata.Uid {
			out = append(out, p)
		}
	}
	return out
}

// The docs' pi Job with completions 3 and parallelism 2 completes with
// three successful pods, never more than two at a time, and every pod's
// tracking finalizer is gone once it is counted.
func testCompletionsAndParallelism(t *testing.T, e *env) {
	e.ns(t, "pi")
	var mu sync.Mutex
	maxActive := 0
	controllertest.ObservePods(e.ctx, t, e.c, "pi", func(pods []*v1.Pod) {
		n := 0
		for _, p := range pods {
			if controller.IsPodActive(p) {
				n++
			}
		}
		mu.Lock()
		maxActive = max(maxActive, n)
		mu.Unlock()
	})
	j := newJob("pi", "pi", "0")
	j.Spec.Completions, j.Spec.Parallelism = proto.Int32(3), proto.Int32(2)
	j = e.create(t, j)
	j = e.waitCondition(t, "pi", "pi", "Complete")
	st := j.GetStatus()
	if st.Succeeded != 3 || st.Failed != 0 || st.CompletionTime == nil || st.StartTime == nil {
		t.Fatalf("status %v", st)
	}
	wait.Eventually(t, 10*time.Second, "finalizers removed", func() error {
		pods := e.jobPods(t, j)
		if len(pods) != 3 {
			return fmt.Errorf("%d pods", len(pods))
		}
		for _, p := range pods {
			if len(p.Metadata.Finalizers) > 0 || p.Status.Phase != "Succeeded" {
				return fmt.Errorf("pod %s: %s %v", p.Metadata.Name, p.Status.Phase, p.Metadata.Finalizers)
			}
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if maxActive > 2 {
		t.Errorf("%d pods ran at once; parallelism is 2", maxActive)
	}
}

// A Job whose pods fail stops at backoffLimit with BackoffLimitExceeded.
func testBackoffLimitExceeded(t *testing.T, e *env) {
	e.ns(t, "failing")
	j := newJob("failing", "fail", "1")
	j.Spec.BackoffLimit = proto.Int32(2)
	e.create(t, j)
	j = e.waitCondition(t, "failing", "fail", "Failed")
	c := controller.GetCondition(j.Status.Conditions, "Failed")
	if c.Reason != job.ReasonBackoffLimitExceeded || j.Status.Failed != 3 || j.Status.Succeeded != 0 {
		t.Fatalf("condition %v, status %v", c, j.Status)
	}
	if n := len(e.jobPods(t, j)); n != 3 {
		t.Errorf("%d pods for backoffLimit 2, want 3", n)
	}
}

// An Indexed Job's pods see their index; completedIndexes covers them all.
func testIndexed(t *testing.T, e *env) {
	e.ns(t, "indexed")
	j := newJob("indexed", "idx", "0")
	j.Spec.Completions, j.Spec.Parallelism, j.Spec.CompletionMode = proto.Int32(3), proto.Int32(3), "Indexed"
	j = e.create(t, j)
	j = e.waitCondition(t, "indexed", "idx", "Complete")
	if j.Status.CompletedIndexes != "0-2" {
		t.Fatalf("completedIndexes %q", j.Status.CompletedIndexes)
	}
	var seen []string
	for _, p := range e.jobPods(t, j) {
		idx := p.Metadata.Annotations[job.IndexAnnotation]
		var env string
		for _, ev := range p.Spec.Containers[0].Env {
			if ev.Name == job.IndexEnv {
				env = ev.Value
			}
		}
		if env != idx || p.Metadata.Labels[job.IndexLabel] != idx || p.Spec.Hostname != "idx-"+idx {
			t.Errorf("pod %s: annotation %q, env %q, hostname %q", p.Metadata.Name, idx, env, p.Spec.Hostname)
		}
		seen = append(seen, idx)
	}
	slices.Sort(seen)
	if !slices.Equal(seen, []string{"0", "1", "2"}) {
		t.Errorf("indexes %v", seen)
	}
}

// A FailJob rule of the pod failure policy fails the Job at the first
// matching exit code; an Ignore rule's failures do not count.
func testPodFailurePolicy(t *testing.T, e *env) {
	e.ns(t, "policy")
	j := newJob("policy", "fatal", "42")
	j.Spec.PodFailurePolicy = &v1.PodFailurePolicy{Rules: []*v1.PodFailurePolicyRule{
		{Action: "FailJob", OnExitCodes: &v1.PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{42}}}}}
	e.create(t, j)
	j = e.waitCondition(t, "policy", "fatal", "Failed")
	if c := controller.GetCondition(j.Status.Conditions, "Failed"); c.Reason != job.ReasonPodFailurePolicy || j.Status.Failed != 1 {
		t.Fatalf("condition %v, status %v", c, j.Status)
	}
	// Ignored failures: backoffLimit 0 would fail the Job at once if they
	// counted. The deadline ends the Job; it leaves a loaded machine time
	// to run, fail and replace a pod at least once.
	ig := newJob("policy", "ignored", "7")
	ig.Spec.BackoffLimit = proto.Int32(0)
	ig.Spec.ActiveDeadlineSeconds = proto.Int64(5)
	ig.Spec.PodFailurePolicy = &v1.PodFailurePolicy{Rules: []*v1.PodFailurePolicyRule{
		{Action: "Ignore", OnExitCodes: &v1.PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{7}}}}}
	e.create(t, ig)
	ig = e.waitCondition(t, "policy", "ignored", "Failed")
	if c := controller.GetCondition(ig.Status.Conditions, "Failed"); c.Reason != job.ReasonDeadlineExceeded || ig.Status.Failed != 0 {
		t.Fatalf("ignored failures: condition %v, status %v", c, ig.Status)
	}
	if n := len(e.jobPods(t, ig)); n < 2 {
		t.Errorf("ignored failures were replaced only %d times", n)
	}
}

// activeDeadlineSeconds fails a Job whose pods run too long and stops them.
func testActiveDeadline(t *testing.T, e *env) {
	e.ns(t, "deadline")
	j := newJob("deadline", "slow", "")
	j.Spec.ActiveDeadlineSeconds = proto.Int64(1)
	e.create(t, j)
	j = e.waitCondition(t, "deadline", "slow", "Failed")
	if c := controller.GetCondition(j.Status.Conditions, "Failed"); c.Reason != job.ReasonDeadlineExceeded {
		t.Fatalf("condition %v", c)
	}
	wait.Eventually(t, 10*time.Second, "the running pod is stopped", func() error {
		for _, p := range e.jobPods(t, j) {
			if p.Metadata.DeletionTimestamp == nil {
				return fmt.Errorf("pod %s still running", p.Metadata.Name)
			}
		}
		return nil
	})
}

// A suspended Job creates no pods; resumed, it runs to completion.
func testSuspendAndResume(t *testing.T, e *env) {
	e.ns(t, "suspend")
	j := newJob("suspend", "later", "0")
	j.Spec.Suspend = proto.Bool(true)
	j = e.create(t, j)
	e.waitCondition(t, "suspend", "later", "Suspended")
	if n := len(e.jobPods(t, j)); n != 0 {
		t.Fatalf("a suspended Job created %d pods", n)
	}
	if _, err := e.jobs.Mutate(e.ctx, "suspend", "later", false, func(j *v1.Job) error { j.Spec.Suspend = proto.Bool(false); return nil }); err != nil {
		t.Fatal(err)
	}
	j = e.waitCondition(t, "suspend", "later", "Complete")
	if c := controller.GetCondition(j.Status.Conditions, "Suspended"); c.Status != "False" || c.Reason != "JobResumed" {
		t.Errorf("Suspended condition %v", c)
	}
}

// ttlSecondsAfterFinished deletes a finished Job and, through the garbage
// collector, its pods.
func testTTLAfterFinished(t *testing.T, e *env) {
	e.ns(t, "ttl")
	j := newJob("ttl", "short", "0")
	j.Spec.TtlSecondsAfterFinished = proto.Int32(0)
	j = e.create(t, j)
	wait.Eventually(t, 30*time.Second, "the job and its pods to be deleted", func() error {
		if _, err := e.jobs.Get(e.ctx, "ttl", "short"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("job still there (%v)", err)
		}
		if n := len(e.jobPods(t, j)); n != 0 {
			return fmt.Errorf("%d pods left", n)
		}
		return nil
	})
}
