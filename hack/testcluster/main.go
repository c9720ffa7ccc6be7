// Command testcluster runs the e2e/cluster test cluster for people (see
// hack/test-cluster.sh, which runs it in the background):
//
//	testcluster up -nodes N -state DIR   start, write DIR/config (a tugctl
//	                                     config as admin) and DIR/ready, run
//	                                     until SIGTERM/SIGINT, then remove it all
//	testcluster cleanup                  remove what killed runs left behind
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/e2e/netlab"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testcluster up -nodes N -state DIR | cleanup")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var err error
	switch os.Args[1] {
	case "up":
		err = up(os.Args[2:], log)
	case "cleanup":
		err = cleanup(log)
	default:
		err = fmt.Errorf("unknown command %q: want up or cleanup", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testcluster:", err)
		os.Exit(1)
	}
}

func cleanup(log *slog.Logger) error {
	ctx := context.Background()
	runs, err := cluster.CleanupStale(ctx, cluster.DefaultBaseDir, log)
	if err != nil {
		return err
	}
	labs, err := netlab.CleanupStale(ctx, netlab.DefaultPrefix, log)
	if err != nil {
		return err
	}
	fmt.Printf("removed %d stale cluster runs %v and %d stale labs %v\n", len(runs), runs, len(labs), labs)
	return nil
}

func up(args []string, log *slog.Logger) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	nodes := fs.Int("nodes", 2, "number of nodes")
	state := fs.String("state", ".tugboat/test-cluster", "directory for binaries, logs, config and the ready marker")
	images := fs.String("images", "busybox,echo", "test images imported on every node (e2e/images names)")
	rt := fs.String("runtime", "", "the kubelets' --runtime: cri (each node its own containerd with the CRI plugin) or containerd (default $TUGBOAT_E2E_RUNTIME, else cri)")
	_ = fs.Parse(args)
	st, err := filepath.Abs(*state)
	if err != nil {
		return err
	}
	for _, d := range []string{"bin", "logs"} {
		if err := os.MkdirAll(filepath.Join(st, d), 0o755); err != nil {
			return err
		}
	}
	_ = os.Remove(filepath.Join(st, "ready"))
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()

	log.Info("building binaries", "dir", filepath.Join(st, "bin"))
	bctx, bcancel := context.WithTimeout(ctx, 10*time.Minute)
	bins, err := cluster.BuildBinaries(bctx, filepath.Join(st, "bin"))
	bcancel()
	if err != nil {
		return err
	}
	for name, why := range bins.Skipped {
		log.Info("running without "+name, "why", firstLine(why))
	}
	var imgs []string
	for _, i := range strings.Split(*images, ",") {
		if i = strings.TrimSpace(i); i != "" {
			imgs = append(imgs, i)
		}
	}
	sctx, scancel := context.WithTimeout(ctx, 5*time.Minute)
	c, err := cluster.New(sctx, cluster.Options{Binaries: bins, Nodes: *nodes, Images: imgs, Runtime: *rt, LogDir: filepath.Join(st, "logs"), Logger: log})
	scancel()
	if err != nil {
		return err
	}
	defer func() {
		log.Info("removing the cluster")
		if err := c.Close(); err != nil {
			log.Error("closing the cluster", "err", err)
		}
		_ = os.Remove(filepath.Join(st, "ready"))
	}()
	for _, n := range c.Nodes {
		if err := n.RouteFromRoot(); err != nil {
			log.Warn("routing the node's pods from this host", "node", n.Name, "err", err)
		}
	}
	pki := c.PKIDir()
	config := fmt.Sprintf("server: %s\ncaFile: %s\ncertFile: %s\nkeyFile: %s\n", c.Server,
		filepath.Join(pki, "ca.crt"), filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"))
	if err := os.WriteFile(filepath.Join(st, "config"), []byte(config), 0o600); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s is up: apiserver %s, scheduler %v, controller-manager %v, runtime %s\n", c.ID, c.Server, c.Scheduler, c.ControllerManager, c.Runtime)
	for _, n := range c.Nodes {
		fmt.Fprintf(&b, "  %s  ip %s  pods %s  netns %s  root %s\n", n.Name, n.IP, n.PodCIDR, n.Host.Name, n.RootDir)
		if e := n.CRIEndpoint(); e != "" {
			fmt.Fprintf(&b, "      its pods in the runtime: crictl --runtime-endpoint %s pods\n", e)
		}
	}
	fmt.Fprintf(&b, "use it with: TUGBOAT_CONFIG=%s bin/tugctl get nodes\n", filepath.Join(st, "config"))
	fmt.Fprintf(&b, "a shell on a node: ip netns exec %s sh (logs in %s)\n", c.Nodes[0].Host.Name, filepath.Join(st, "logs"))
	if err := os.WriteFile(filepath.Join(st, "ready"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(b.String())
	<-ctx.Done()
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
