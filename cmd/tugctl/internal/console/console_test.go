package console

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/diagnose"
)

// startConsole serves a console with c on a free loopback port until the
// test ends and returns its URL.
func startConsole(t *testing.T, c *client.Client) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	urlc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, c, Config{Listen: "127.0.0.1:0", OnServing: func(u string) { urlc <- u }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && err != http.ErrServerClosed {
			t.Errorf("console: %v", err)
		}
	})
	select {
	case u := <-urlc:
		return u
	case err := <-done:
		t.Fatalf("console: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("console did not start")
	}
	return ""
}

// sse reads a feed's events.
type sse struct {
	sc   *bufio.Scanner
	resp *http.Response
}

func openFeed(t *testing.T, base string) *sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"api/feed", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("feed: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	return &sse{sc: sc, resp: resp}
}

// next returns the next event's name and data.
func (s *sse) next(t *testing.T) (string, []byte) {
	t.Helper()
	var name string
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			return name, []byte(strings.TrimPrefix(line, "data: "))
		}
	}
	t.Fatalf("feed ended: %v", s.sc.Err())
	return "", nil
}

func podOn(name, node string) *v1.Pod {
	return &v1.Pod{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "bulk"}},
		Spec: &v1.PodSpec{NodeName: node, Containers: []*v1.Container{{Name: "c", Image: "app:1"}}}}
}

// TestFeedSnapshotThenBatches: a page gets what exists, then every new
// pod, in batches of several objects each.
func TestFeedSnapshotThenBatches(t *testing.T) {
	srv := apiservertest.StartSecure(t)
	ctx := context.Background()
	node, err := client.For[*v1.Node](srv.Client).Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: "n1"}, Spec: &v1.NodeSpec{PodCidr: "10.244.1.0/24"}})
	if err != nil {
		t.Fatal(err)
	}
	node.Status = &v1.NodeStatus{Allocatable: map[string]string{"cpu": "2", "memory": "4Gi"},
		Conditions: []*v1.Condition{{Type: "Ready", Status: "True", LastTransitionTime: timestamppb.Now()},
			{Type: "MemoryPressure", Status: "True", LastTransitionTime: timestamppb.Now()}}}
	if _, err := client.For[*v1.Node](srv.Client).UpdateStatus(ctx, node); err != nil {
		t.Fatal(err)
	}
	base := startConsole(t, srv.Client)
	// The feed has listed every kind before the snapshot we check.
	var snap snapshot
	wait.Eventually(t, 10*time.Second, "a snapshot with the node and every kind synced", func() error {
		f := openFeed(t, base)
		defer f.resp.Body.Close()
		name, data := f.next(t)
		if name != "snapshot" {
			return fmt.Errorf("first event %q", name)
		}
		snap = snapshot{}
		if err := json.Unmarshal(data, &snap); err != nil {
			return err
		}
		b, _ := json.Marshal(snap.Objects[kindNodes]["n1"])
		var got nodeSummary
		if err := json.Unmarshal(b, &got); err != nil {
			return err
		}
		if want := (nodeSummary{Name: "n1", Ready: "True", Pressure: []string{"MemoryPressure"}, PodCIDR: "10.244.1.0/24", CPU: 2000, Memory: 4 << 30}); fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("node n1: %+v, want %+v", got, want)
		}
		for _, k := range []string{kindPods, kindSecrets, kindEvents, kindWorkloads + "/Deployment"} {
			if !snap.Status[k].Synced {
				return fmt.Errorf("%s not synced: %+v", k, snap.Status)
			}
		}
		return nil
	})
	f := openFeed(t, base)
	if name, _ := f.next(t); name != "snapshot" {
		t.Fatalf("first event %q", name)
	}
	const n = 120
	for i := range n {
		if _, err := client.For[*v1.Pod](srv.Client).Create(ctx, podOn(fmt.Sprintf("bulk-%03d", i), "n1")); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	batches := 0
	for len(seen) < n {
		name, data := f.next(t)
		if name != "batch" {
			t.Fatalf("event %q after the snapshot", name)
		}
		batches++
		var chs []struct {
			K  string          `json:"k"`
			ID string          `json:"id"`
			O  json.RawMessage `json:"o"`
		}
		if err := json.Unmarshal(data, &chs); err != nil {
			t.Fatal(err)
		}
		for _, ch := range chs {
			if ch.K != kindPods {
				continue
			}
			var p podSummary
			if err := json.Unmarshal(ch.O, &p); err != nil {
				t.Fatal(err)
			}
			if p.Node != "n1" || p.Phase != "Pending" || p.Labels["app"] != "bulk" || ch.ID != "default/"+p.Name {
				t.Fatalf("pod change %s: %+v", ch.ID, p)
			}
			seen[ch.ID] = true
		}
	}
	t.Logf("%d pods arrived in %d batches", n, batches)
}

// TestFeedCoalesces: however often an object changes between two
// batches, a page gets it once, in its latest state; deletes too.
func TestFeedCoalesces(t *testing.T) {
	f := newFeed(nil, nil)
	sub, _ := f.subscribe()
	for i := range 5000 {
		f.put(kindPods, fmt.Sprintf("ns/p%d", i), podSummary{Name: fmt.Sprint(i), Phase: "Pending"})
	}
	for range 10 {
		f.put(kindPods, "ns/p7", podSummary{Name: "7", Phase: "Running"})
	}
	f.put(kindPods, "ns/p8", nil)
	batch := f.take(sub)
	if len(batch) != 5000 {
		t.Fatalf("batch of %d changes, want 5000 (one per object)", len(batch))
	}
	for _, ch := range batch {
		switch ch.Key {
		case "ns/p7":
			if ch.Obj.(podSummary).Phase != "Running" {
				t.Errorf("p7: %+v, want its latest state", ch.Obj)
			}
		case "ns/p8":
			if ch.Obj != nil {
				t.Errorf("p8: %+v, want deleted", ch.Obj)
			}
		}
	}
	if again := f.take(sub); len(again) != 0 {
		t.Fatalf("a second take returned %d changes", len(again))
	}
	select {
	case <-sub.wake:
	default:
		t.Fatal("the subscriber was not woken")
	}
}

// TestPodFlow: the stages come from diagnose's trace through the API,
// with the owner chain from the feed; an unbound pod stops at the
// scheduler.
func TestPodFlow(t *testing.T) {
	srv := apiservertest.StartSecure(t)
	ctx := context.Background()
	rs, err := client.For[*v1.ReplicaSet](srv.Client).Create(ctx, &v1.ReplicaSet{Metadata: &v1.ObjectMeta{Name: "web-1", Namespace: "default"},
		Spec: &v1.ReplicaSetSpec{Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "app:1"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	p := podOn("web-1-abc", "")
	p.Metadata.Labels = map[string]string{"app": "web"}
	p.Metadata.OwnerReferences = []*v1.OwnerReference{{ApiVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", Uid: rs.GetMetadata().GetUid(), Controller: true}}
	if _, err := client.For[*v1.Pod](srv.Client).Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	base := startConsole(t, srv.Client)
	var flow PodFlow
	wait.Eventually(t, 10*time.Second, "the pod's flow with its ReplicaSet", func() error {
		resp, err := http.Get(base + "api/flow/pod/default/web-1-abc")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		flow = PodFlow{}
		if err := json.NewDecoder(resp.Body).Decode(&flow); err != nil {
			return err
		}
		if len(flow.Stages) < 4 || !strings.Contains(flow.Stages[3].Detail, "replicaset/web-1") {
			return fmt.Errorf("stages %+v", flow.Stages)
		}
		return nil
	})
	var ids []string
	for _, s := range flow.Stages {
		ids = append(ids, s.ID+"="+s.Status)
	}
	want := "apply=done apiserver=done etcd=done controllers=done scheduler=waiting kubelet=waiting CNI=waiting runtime=waiting Running=waiting status=waiting"
	if got := strings.Join(ids, " "); got != want {
		t.Errorf("stages:\n got %s\nwant %s", got, want)
	}
	if flow.Failed != "scheduler" || flow.Trace.Reason != "NotScheduledYet" || flow.Trace.Layer != diagnose.LayerScheduler {
		t.Errorf("failed %q, trace %+v", flow.Failed, flow.Trace.Finding)
	}
	if resp, err := http.Get(base + "api/flow/pod/default/ghost"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("a missing pod: %v %v", resp.Status, err)
	}
}

// TestBuildPodFlowGroupsHops: each hop of a finished trace lands in its
// stage, with the stage's time its last hop's.
func TestBuildPodFlowGroupsHops(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) *time.Time { x := t0.Add(time.Duration(s * float64(time.Second))); return &x }
	r := &diagnose.Report{Kind: "Pod", Namespace: "default", Name: "p", OK: false, Hops: []diagnose.Hop{
		{Hop: "accepted", Status: diagnose.HopDone, Time: at(0)},
		{Hop: "scheduled", Status: diagnose.HopDone, Time: at(0.1)},
		{Hop: "kubelet", Status: diagnose.HopDone, Time: at(0.2)},
		{Hop: "sandbox", Status: diagnose.HopDone, Time: at(0.5)},
		{Hop: "images", Status: diagnose.HopFailed, Reason: "ErrImageNeverPull", Title: "images ready", Time: at(0.6)},
		{Hop: "started", Status: diagnose.HopWaiting},
		{Hop: "running", Status: diagnose.HopWaiting},
		{Hop: "ready", Status: diagnose.HopWaiting},
		{Hop: "endpoints", Status: diagnose.HopSkipped},
	}, Finding: diagnose.Finding{StuckAt: "images", Layer: diagnose.LayerKubelet, Reason: "ErrImageNeverPull"}}
	p := &v1.Pod{Metadata: &v1.ObjectMeta{Name: "p", Namespace: "default", CreationTimestamp: timestamppb.New(t0)}}
	f := buildPodFlow(r, p, nil)
	got := map[string]Stage{}
	for _, s := range f.Stages {
		got[s.ID] = s
	}
	if s := got[stageControllers]; s.Status != diagnose.HopSkipped {
		t.Errorf("a bare pod's controllers stage: %+v", s)
	}
	if s := got[stageCNI]; s.Status != diagnose.HopDone || !s.Time.Equal(*at(0.5)) {
		t.Errorf("CNI: %+v", s)
	}
	if s := got[stageRuntime]; s.Status != diagnose.HopFailed || !strings.Contains(s.Detail, "ErrImageNeverPull") {
		t.Errorf("runtime: %+v", s)
	}
	if s := got[stageStatus]; s.Status != diagnose.HopWaiting || s.Time != nil {
		t.Errorf("status back: %+v", s)
	}
	if f.Failed != stageRuntime {
		t.Errorf("failed %q, want runtime", f.Failed)
	}
}

// TestForbiddenKindsStayForbidden: a user who may not list Secrets (the
// scheduler's identity) gets them marked forbidden and none of them.
func TestForbiddenKindsStayForbidden(t *testing.T) {
	srv := apiservertest.StartSecure(t)
	ctx := context.Background()
	if _, err := client.For[*v1.Secret](srv.Client).Create(ctx, &v1.Secret{Metadata: &v1.ObjectMeta{Name: "s1", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	base := startConsole(t, srv.ClientAs("scheduler"))
	wait.Eventually(t, 10*time.Second, "secrets forbidden, pods synced", func() error {
		f := openFeed(t, base)
		defer f.resp.Body.Close()
		_, data := f.next(t)
		var snap snapshot
		if err := json.Unmarshal(data, &snap); err != nil {
			return err
		}
		if st := snap.Status[kindSecrets]; !strings.Contains(st.Forbidden, "secrets") {
			return fmt.Errorf("secrets status %+v", st)
		}
		if !snap.Status[kindPods].Synced {
			return fmt.Errorf("pods not synced")
		}
		if len(snap.Objects[kindSecrets]) != 0 {
			return fmt.Errorf("secrets served: %v", snap.Objects[kindSecrets])
		}
		return nil
	})
}

// TestAuth: a console with a token answers its API only after the
// page's login; a loopback console refuses other Host names.
func TestAuth(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux := http.NewServeMux()
	a := newAuth("s3cret", false)
	mux.HandleFunc("POST /api/login", a.login)
	mux.Handle("/", ok)
	srv := httptest.NewServer(a.wrap(mux))
	defer srv.Close()
	get := func(path string, cookies ...*http.Cookie) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/api/feed"); code != http.StatusUnauthorized {
		t.Errorf("feed without login: %d", code)
	}
	if code := get("/index.html"); code != http.StatusOK {
		t.Errorf("the page itself: %d", code)
	}
	login := func(tok string) *http.Response {
		resp, err := http.PostForm(srv.URL+"/api/login", url.Values{"token": {tok}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := login("wrong"); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("wrong token: %d %v", resp.StatusCode, resp.Cookies())
	}
	resp := login("s3cret")
	if resp.StatusCode != http.StatusNoContent || len(resp.Cookies()) != 1 || strings.Contains(resp.Cookies()[0].Value, "s3cret") {
		t.Fatalf("login: %d %v", resp.StatusCode, resp.Cookies())
	}
	if code := get("/api/feed", resp.Cookies()...); code != http.StatusOK {
		t.Errorf("feed after login: %d", code)
	}

	lo := httptest.NewServer(newAuth("", true).wrap(ok))
	defer lo.Close()
	req, _ := http.NewRequest(http.MethodGet, lo.URL+"/api/feed", nil)
	req.Host = "attacker.example:8080"
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a foreign Host on loopback: %d", r2.StatusCode)
	}
	if !loopback("127.0.0.1:8080") || !loopback("[::1]:80") || !loopback("localhost:1") || loopback("0.0.0.0:8080") || loopback("10.0.0.1:80") {
		t.Error("loopback() misjudges an address")
	}
}

// TestDemoAppliesAndReplaces: --demo's workload is created in the
// namespace, and a second run replaces the first.
func TestDemoAppliesAndReplaces(t *testing.T) {
	srv := apiservertest.StartSecure(t)
	ctx := context.Background()
	var uids []string
	for range 2 {
		d, err := startDemo(ctx, srv.Client, "default", "app:1")
		if err != nil {
			t.Fatal(err)
		}
		dep, err := client.For[*v1.Deployment](srv.Client).Get(ctx, "default", d.Deployment)
		if err != nil {
			t.Fatal(err)
		}
		if img := dep.GetSpec().GetTemplate().GetSpec().GetContainers()[0].GetImage(); img != "app:1" {
			t.Errorf("demo image %q", img)
		}
		if _, err := client.For[*v1.Service](srv.Client).Get(ctx, "default", d.Service); err != nil {
			t.Fatal(err)
		}
		uids = append(uids, dep.GetMetadata().GetUid())
	}
	if uids[0] == uids[1] {
		t.Error("the second demo did not replace the first")
	}
}

// TestSnapshotHasNoNullKinds: a kind with nothing listed yet is absent
// from the snapshot, never null (the page reads every kind as a map).
func TestSnapshotHasNoNullKinds(t *testing.T) {
	f := newFeed(nil, nil)
	f.put(kindPods, "ns/p", podSummary{Name: "p"})
	_, snap := f.subscribe()
	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "null") {
		t.Errorf("snapshot %s has a null", b)
	}
}
