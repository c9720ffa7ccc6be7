package kubelet_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/deploy/images"
)

// imageArchive is busybox under another name.
func imageArchive(t *testing.T, ref string) []byte {
	t.Helper()
	img, err := images.Busybox(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	img.Ref = ref
	var b bytes.Buffer
	if err := img.WriteArchive(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestMissingImageThenImport: pods whose image is not on the node wait
// with ErrImageNeverPull (policy Never) or ErrImagePull/ImagePullBackOff
// (IfNotPresent, no registry), both saying how to import it; `image
// import` through the apiserver — and a tarball dropped into the node's
// import folder — makes the same pods start, without recreating them.
func TestMissingImageThenImport(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns := "images"
	// A registry host on a closed loopback port: a pull fails at once
	// without asking any resolver or registry outside the test.
	const late = "127.0.0.1:5/tugboat/late:v1"
	never := busyboxPod(ns, "never", "node1", "exec sleep 3600")
	never.Spec.Containers[0].Image, never.Spec.Containers[0].ImagePullPolicy = late, "Never"
	ifNot := busyboxPod(ns, "ifnot", "node1", "exec sleep 3600")
	ifNot.Spec.Containers[0].Image = late
	created := map[string]*v1.Pod{}
	for _, p := range []*v1.Pod{never, ifNot} {
		created[p.Metadata.Name] = createPod(t, c.Client, p)
	}
	hint := "image " + late + " is not present on node node1: import it with `tugctl image import FILE.tar --node node1` or drop the tarball into "
	p := waitPod(t, c.Client, ns, "never", 60*time.Second, "ErrImageNeverPull", func(p *v1.Pod) bool {
		return containerStatus(p, "main").GetState().GetWaiting().GetReason() == "ErrImageNeverPull"
	})
	if msg := containerStatus(p, "main").GetState().GetWaiting().GetMessage(); !strings.Contains(msg, hint) {
		t.Errorf("ErrImageNeverPull message %q lacks the hint %q", msg, hint)
	}
	if cond := condition(p, "tugboat.io/ImagesReady"); cond.GetStatus() != "False" || cond.GetReason() != "ErrImageNeverPull" {
		t.Errorf("ImagesReady %v", cond)
	}
	waitPod(t, c.Client, ns, "ifnot", 60*time.Second, "ImagePullBackOff", func(p *v1.Pod) bool {
		w := containerStatus(p, "main").GetState().GetWaiting()
		return w.GetReason() == "ImagePullBackOff" && strings.Contains(w.GetMessage(), hint)
	})
	waitEvent(t, c.Client, ns, "ifnot", "Failed: Failed to pull image", 10*time.Second)

	// tugctl image import FILE.tar --node node1, through the apiserver.
	st, err := v1.NewNodeAPIClient(c.Client.Conn()).ImportImage(ctxFor(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	archive := imageArchive(t, late)
	if err := st.Send(&v1.ImageUpload{NodeName: "node1"}); err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(archive); off += 64 << 10 {
		if err := st.Send(&v1.ImageUpload{Data: archive[off:min(off+64<<10, len(archive))]}); err != nil {
			t.Fatal(err)
		}
	}
	_ = st.CloseSend()
	var last *v1.ImportProgress
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = m
	}
	if !last.GetDone() || len(last.Images) != 1 || last.Images[0] != late || last.BytesReceived != int64(len(archive)) {
		t.Fatalf("import result %v", last)
	}
	for _, name := range []string{"never", "ifnot"} {
		p := waitPod(t, c.Client, ns, name, 30*time.Second, "Running after the import", running)
		if p.Metadata.Uid != created[name].Metadata.Uid || containerStatus(p, "main").RestartCount != 0 {
			t.Errorf("%s: uid %s restarts %d: the pod was recreated or restarted", name, p.Metadata.Uid, containerStatus(p, "main").RestartCount)
		}
	}
	resp, err := v1.NewNodeAPIClient(c.Client.Conn()).ListImages(context.Background(), &v1.ListImagesRequest{NodeName: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, i := range resp.Images {
		for _, n := range i.Names {
			found = found || n == late
		}
	}
	if !found {
		t.Errorf("image ls on node1 lacks %s: %v", late, resp.Images)
	}

	// The import folder of node2.
	const dropped = "tugboat.local/dropped:v1"
	drop := busyboxPod(ns, "dropped", "node2", "exec sleep 3600")
	drop.Spec.Containers[0].Image, drop.Spec.Containers[0].ImagePullPolicy = dropped, "Never"
	createPod(t, c.Client, drop)
	waitPod(t, c.Client, ns, "dropped", 60*time.Second, "ErrImageNeverPull", func(p *v1.Pod) bool {
		return containerStatus(p, "main").GetState().GetWaiting().GetReason() == "ErrImageNeverPull"
	})
	n2 := c.Node("node2")
	tmp := filepath.Join(n2.ImportDir, ".dropped.tar.part")
	if err := os.WriteFile(tmp, imageArchive(t, dropped), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(n2.ImportDir, "dropped.tar")); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c.Client, ns, "dropped", 30*time.Second, "Running after the drop", running)
}
