package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/tunnel"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// fakeRuntime serves the containers the test sets; only what the server
// uses is implemented.
type fakeRuntime struct {
	runtime.Runtime
	mu         sync.Mutex
	containers []runtime.ContainerStatus
	sandboxes  []runtime.SandboxStatus
	imported   []byte
}

func (f *fakeRuntime) ListContainers(_ context.Context, flt runtime.ContainerFilter) ([]runtime.ContainerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []runtime.ContainerStatus
	for _, c := range f.containers {
		if (flt.PodUID == "" || c.Pod.UID == flt.PodUID) && (flt.State == "" || c.State == flt.State) {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string) (runtime.ContainerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.containers {
		if c.ID == id {
			return c, nil
		}
	}
	return runtime.ContainerStatus{}, runtime.ErrNotFound
}

func (f *fakeRuntime) exit(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.containers {
		if f.containers[i].ID == id {
			f.containers[i].State = runtime.ContainerExited
		}
	}
}

// Exec echoes its command and stdin; "missing" cannot be started.
func (f *fakeRuntime) Exec(ctx context.Context, id string, req runtime.ExecRequest) (int, error) {
	if req.Cmd[0] == "missing" {
		return 0, errors.New(`exec: "missing": executable file not found in $PATH`)
	}
	fmt.Fprintf(req.Stdout, "%s ran %s", id, strings.Join(req.Cmd, " "))
	if req.Stdin != nil {
		b, _ := io.ReadAll(req.Stdin)
		fmt.Fprintf(req.Stdout, " with %q", b)
	}
	fmt.Fprint(req.Stderr, "warning")
	return 3, nil
}

func (f *fakeRuntime) ImportImage(_ context.Context, r io.Reader) ([]runtime.ImageStatus, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.imported = b
	f.mu.Unlock()
	return []runtime.ImageStatus{{Ref: "tugboat.local/new:v1", ID: "sha256:n", Size: int64(len(b))}}, nil
}

func (f *fakeRuntime) ListImages(context.Context) ([]runtime.ImageStatus, error) {
	return []runtime.ImageStatus{{Ref: "b:1", ID: "sha256:x", Size: 5}, {Ref: "a:1", ID: "sha256:x", Size: 5}}, nil
}

// ListPodSandbox answers from sandboxes when the test set them (by state);
// otherwise with one ready sandbox on the node's network for any pod
// (port-forward dials the node's localhost then).
func (f *fakeRuntime) ListPodSandbox(_ context.Context, flt runtime.SandboxFilter) ([]runtime.SandboxStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sandboxes != nil {
		var out []runtime.SandboxStatus
		for _, sb := range f.sandboxes {
			if flt.State == "" || sb.State == flt.State {
				out = append(out, sb)
			}
		}
		return out, nil
	}
	if flt.PodUID == "u-none" {
		return nil, nil
	}
	return []runtime.SandboxStatus{{ID: "sb-" + flt.PodUID, State: runtime.SandboxReady, Config: runtime.SandboxConfig{HostNetwork: true}}}, nil
}

// Attach prints what it was attached with, echoes stdin and exits 5.
func (f *fakeRuntime) Attach(ctx context.Context, id string, req runtime.ExecRequest) (int, error) {
	fmt.Fprintf(req.Stdout, "attached to %s tty=%v", id, req.TTY)
	if req.Stdin != nil {
		b, _ := io.ReadAll(req.Stdin)
		fmt.Fprintf(req.Stdout, " read %q", b)
	}
	return 5, nil
}

type pods map[string]*v1.Pod

func (p pods) Get(k string) (*v1.Pod, bool) { pod, ok := p[k]; return pod, ok }

// setup runs the server behind a real apiserver's tunnel relay and
// returns the user's NodeAPI client.
func setup(t *testing.T) (v1.NodeAPIClient, *fakeRuntime, string, *int) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dir := t.TempDir()
	log0, log1 := filepath.Join(dir, "0.log"), filepath.Join(dir, "1.log")
	os.WriteFile(log0, []byte("old 1\nold 2\n"), 0o644)
	os.WriteFile(log1, []byte("line 1\nline 2\nline 3\n"), 0o644)
	// A CRI runtime's log (the att pod's container).
	logCRI := filepath.Join(dir, "cri.log")
	os.WriteFile(logCRI, []byte("2026-12-01T10:00:00.000000001Z stdout P hel\n2026-12-01T10:00:00.000000002Z stdout F lo\n2026-12-01T10:00:01Z stderr F oops\n"), 0o644)
	ref := runtime.PodRef{Namespace: "default", Name: "web", UID: "u1"}
	rt := &fakeRuntime{containers: []runtime.ContainerStatus{
		{ID: "c0", Pod: ref, Name: "app", Attempt: 0, State: runtime.ContainerExited, LogPath: log0},
		{ID: "c1", Pod: ref, Name: "app", Attempt: 1, State: runtime.ContainerRunning, LogPath: log1},
		{ID: "c3", Pod: runtime.PodRef{Namespace: "default", Name: "att", UID: "u3"}, Name: "app", State: runtime.ContainerRunning, LogPath: logCRI, LogFormat: runtime.LogFormatCRI},
	}}
	imports := 0
	srv := New(Config{NodeName: "n1", Runtime: rt, OnImport: func() { imports++ }, Pods: pods{
		"default/web": {Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default", Uid: "u1"},
			Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "app"}}}},
		"default/two": {Metadata: &v1.ObjectMeta{Name: "two", Namespace: "default", Uid: "u2"},
			Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "a"}, {Name: "b"}}}},
		"default/att": {Metadata: &v1.ObjectMeta{Name: "att", Namespace: "default", Uid: "u3"},
			Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "app", Stdin: true, Tty: true}}}},
	}})
	g := grpc.NewServer()
	srv.Register(g)
	go tunnel.Serve(ctx, s.Client, "n1", g, nil)
	for _, name := range []string{"web", "two", "att"} {
		spec := &v1.PodSpec{NodeName: "n1", Containers: []*v1.Container{{Name: "app", Image: "busybox"}}}
		if _, err := client.For[*v1.Pod](s.Client).Create(ctx, &v1.Pod{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"}, Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	wait.Eventually(t, 10*time.Second, "the tunnel connected", func() error {
		if len(s.Tunnels().Nodes()) == 0 {
			return errors.New("no node has a tunnel")
		}
		return nil
	})
	return v1.NewNodeAPIClient(s.Client.Conn()), rt, log1, &imports
}

func readLogs(t *testing.T, api v1.NodeAPIClient, req *v1.LogsRequest) (string, error) {
	t.Helper()
	st, err := api.Logs(context.Background(), req)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), apierrors.FromGRPC(err)
		}
		b.Write(c.Data)
	}
}

func TestLogs(t *testing.T) {
	api, rt, log1, _ := setup(t)
	for _, tc := range []struct {
		name string
		req  *v1.LogsRequest
		want string
		err  string
	}{
		{"current", &v1.LogsRequest{Pod: "web"}, "line 1\nline 2\nline 3\n", ""},
		{"tail", &v1.LogsRequest{Pod: "web", Container: "app", TailLines: 2}, "line 2\nline 3\n", ""},
		{"previous", &v1.LogsRequest{Pod: "web", Previous: true}, "old 1\nold 2\n", ""},
		{"no such pod", &v1.LogsRequest{Pod: "nope"}, "", "not found"},
		{"no such container", &v1.LogsRequest{Pod: "web", Container: "db"}, "", `container "db" is not in pod`},
		{"timestamps of a raw log", &v1.LogsRequest{Pod: "web", Timestamps: true}, "", "timestamps: not supported"},
		{"CRI log", &v1.LogsRequest{Pod: "att"}, "hello\noops\n", ""},
		{"CRI log with timestamps", &v1.LogsRequest{Pod: "att", Timestamps: true}, "2026-12-01T10:00:00.000000001Z hello\n2026-12-01T10:00:01Z oops\n", ""},
		{"CRI log since a time", &v1.LogsRequest{Pod: "att", SinceTime: timestamppb.New(time.Date(2026, 12, 1, 10, 0, 0, 500000000, time.UTC))}, "oops\n", ""},
		{"since on a raw log", &v1.LogsRequest{Pod: "web", SinceSeconds: 10}, "", "since: not supported by node"},
		{"since twice", &v1.LogsRequest{Pod: "web", SinceSeconds: 10, SinceTime: timestamppb.Now()}, "", "at most one of them"},
		{"limit", &v1.LogsRequest{Pod: "web", LimitBytes: 9}, "line 1\nli", ""},
		{"ambiguous", &v1.LogsRequest{Pod: "two"}, "", "choose one of: [a b]"},
	} {
		got, err := readLogs(t, api, tc.req)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}

	// Follow: appended output arrives; the stream ends when the container exits.
	st, err := api.Logs(context.Background(), &v1.LogsRequest{Pod: "web", Follow: true, TailLines: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Recv()
	if err != nil || string(c.Data) != "line 3\n" {
		t.Fatalf("first chunk %q, %v", c.GetData(), err)
	}
	f, _ := os.OpenFile(log1, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("line 4\n")
	f.Close()
	c, err = st.Recv()
	if err != nil || string(c.Data) != "line 4\n" {
		t.Fatalf("followed chunk %q, %v", c.GetData(), err)
	}
	rt.exit("c1")
	for {
		_, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("follow ended with %v, want EOF once the container exited", err)
		}
	}
}

func exec(t *testing.T, api v1.NodeAPIClient, start *v1.ExecStart, stdin string) (string, string, int32, error) {
	t.Helper()
	st, err := api.Exec(context.Background())
	if err != nil {
		return "", "", 0, err
	}
	st.Send(&v1.ExecInput{Start: start})
	if stdin != "" {
		st.Send(&v1.ExecInput{Stdin: []byte(stdin)})
		st.Send(&v1.ExecInput{StdinEof: true})
	}
	var out, errOut string
	for {
		m, err := st.Recv()
		if err != nil {
			return out, errOut, -1, apierrors.FromGRPC(err)
		}
		out += string(m.Stdout)
		errOut += string(m.Stderr)
		if m.Exited {
			return out, errOut, m.ExitCode, nil
		}
	}
}

func TestExec(t *testing.T) {
	api, _, _, _ := setup(t)
	out, errOut, code, err := exec(t, api, &v1.ExecStart{Pod: "web", Command: []string{"cat"}, Stdin: true}, "hello")
	if err != nil || out != `c1 ran cat with "hello"` || errOut != "warning" || code != 3 {
		t.Fatalf("exec: %q %q %d %v", out, errOut, code, err)
	}
	_, errOut, code, err = exec(t, api, &v1.ExecStart{Pod: "web", Command: []string{"missing"}}, "")
	if err != nil || code != 126 || !strings.Contains(errOut, "executable file not found") {
		t.Fatalf("exec missing: %q %d %v", errOut, code, err)
	}
	if _, _, _, err := exec(t, api, &v1.ExecStart{Pod: "nope", Command: []string{"true"}}, ""); !apierrors.IsNotFound(err) {
		t.Fatalf("exec in a missing pod: %v", err)
	}
}

func TestImportAndListImages(t *testing.T) {
	api, rt, _, imports := setup(t)
	st, err := api.ImportImage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	payload := strings.Repeat("x", 100<<10)
	st.Send(&v1.ImageUpload{NodeName: "n1", Data: []byte(payload[:10])})
	st.Send(&v1.ImageUpload{Data: []byte(payload[10:])})
	st.CloseSend()
	var last *v1.ImportProgress
	for {
		p, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = p
	}
	if !last.GetDone() || last.BytesReceived != int64(len(payload)) || len(last.Images) != 1 || last.Images[0] != "tugboat.local/new:v1" {
		t.Fatalf("last progress %v", last)
	}
	if string(rt.imported) != payload || *imports != 1 {
		t.Errorf("imported %d bytes, OnImport called %d times", len(rt.imported), *imports)
	}
	resp, err := api.ListImages(context.Background(), &v1.ListImagesRequest{NodeName: "n1"})
	if err != nil || len(resp.Images) != 1 || strings.Join(resp.Images[0].Names, ",") != "a:1,b:1" {
		t.Fatalf("ListImages %v %v", resp, err)
	}
}
