package containerd

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// BenchmarkPodStart measures one pod start as the kubelet will do it, image
// present: netns, sandbox record, CNI ADD, /etc files, create and start a
// container. Teardown is not timed. Reported per pod: total and each step
// in ms.
func BenchmarkPodStart(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	var netnsT, sandboxT, cniT, createT, startT time.Duration
	for i := 0; i < b.N; i++ {
		uid := randHex(8)
		dir := filepath.Join(e.dir, uid)

		t0 := time.Now()
		nsPath, err := e.net.CreateNetNS("tugboat-bench-" + uid)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		id, err := e.rt.RunPodSandbox(ctx, runtime.SandboxConfig{
			Pod: runtime.PodRef{Namespace: "default", Name: "bench", UID: uid}, NetNSPath: nsPath,
			EtcFiles: runtime.EtcFilesIn(filepath.Join(dir, "etc")),
		})
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		pn := network.PodNetwork{ID: id, NetNSPath: nsPath, Namespace: "default", Name: "bench", UID: uid}
		ip, err := e.net.SetUpPod(ctx, pn)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := runtime.WriteEtcFiles(filepath.Join(dir, "etc"), runtime.PodEtc{Hostname: "bench", IPs: []string{ip.String()}}); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		cid, err := e.rt.CreateContainer(ctx, id, runtime.ContainerConfig{
			Name: "c", Image: images.BusyboxRef, Command: []string{"sleep", "1000"},
			LogPath: filepath.Join(dir, "c.log"),
		})
		if err != nil {
			b.Fatal(err)
		}
		t4 := time.Now()
		if err := e.rt.StartContainer(ctx, cid); err != nil {
			b.Fatal(err)
		}
		t5 := time.Now()
		netnsT += t1.Sub(t0)
		sandboxT += t2.Sub(t1)
		cniT += t3.Sub(t2)
		createT += t4.Sub(t3)
		startT += t5.Sub(t4)

		b.StopTimer()
		if err := e.rt.StopPodSandbox(ctx, id); err != nil {
			b.Fatal(err)
		}
		if err := e.net.TearDownPod(ctx, pn); err != nil {
			b.Fatal(err)
		}
		if err := e.net.DeleteNetNS(nsPath); err != nil {
			b.Fatal(err)
		}
		if err := e.rt.RemovePodSandbox(ctx, id); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(netnsT), "netns-ms/pod")
	b.ReportMetric(ms(sandboxT), "sandbox-ms/pod")
	b.ReportMetric(ms(cniT), "cni-add-ms/pod")
	b.ReportMetric(ms(createT), "create-ms/pod")
	b.ReportMetric(ms(startT), "start-ms/pod")
}

// BenchmarkPodStart30 starts 30 pods at once (the node benchmark,
// without the kubelet): the time until all 30 containers are started.
func BenchmarkPodStart30(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	const pods = 30
	for i := 0; i < b.N; i++ {
		type started struct {
			id, ns string
			pn     network.PodNetwork
			err    error
		}
		results := make(chan started, pods)
		for j := 0; j < pods; j++ {
			go func() {
				var s started
				uid := randHex(8)
				dir := filepath.Join(e.dir, uid)
				if s.ns, s.err = e.net.CreateNetNS("tugboat-bench-" + uid); s.err != nil {
					results <- s
					return
				}
				if s.id, s.err = e.rt.RunPodSandbox(ctx, runtime.SandboxConfig{
					Pod: runtime.PodRef{Namespace: "default", Name: "bench", UID: uid}, NetNSPath: s.ns,
				}); s.err != nil {
					results <- s
					return
				}
				s.pn = network.PodNetwork{ID: s.id, NetNSPath: s.ns, Namespace: "default", Name: "bench", UID: uid}
				if _, s.err = e.net.SetUpPod(ctx, s.pn); s.err != nil {
					results <- s
					return
				}
				var cid string
				if cid, s.err = e.rt.CreateContainer(ctx, s.id, runtime.ContainerConfig{
					Name: "c", Image: images.BusyboxRef, Command: []string{"sleep", "1000"}, LogPath: filepath.Join(dir, "c.log"),
				}); s.err == nil {
					s.err = e.rt.StartContainer(ctx, cid)
				}
				results <- s
			}()
		}
		var all []started
		for j := 0; j < pods; j++ {
			all = append(all, <-results)
		}
		b.StopTimer()
		for _, s := range all {
			if s.err != nil {
				b.Error(s.err)
			}
			if s.id != "" {
				_ = e.rt.StopPodSandbox(ctx, s.id)
				_ = e.net.TearDownPod(ctx, s.pn)
				_ = e.rt.RemovePodSandbox(ctx, s.id)
			}
			if s.ns != "" {
				_ = e.net.DeleteNetNS(s.ns)
			}
		}
		b.StartTimer()
	}
}
