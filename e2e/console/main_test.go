package console

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/e2e/cluster"
)

var (
	bins *cluster.Binaries
	// tugctlBin is built next to the cluster's binaries ("" when the
	// machine cannot run a cluster: see tugctlFor).
	tugctlBin string
)

func TestMain(m *testing.M) {
	os.Exit(cluster.TestMainWith(m, &bins, map[string]*string{"tugctl": &tugctlBin}))
}

// tugctlFor returns the tugctl binary, building it into a temp dir when
// TestMain did not (the benchmark needs no cluster, so no root).
func tugctlFor(tb testing.TB) string {
	tb.Helper()
	if tugctlBin != "" {
		return tugctlBin
	}
	mod, err := cluster.ModuleDir()
	if err != nil {
		tb.Fatal(err)
	}
	out := filepath.Join(tb.TempDir(), "tugctl")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/tugctl")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build ./cmd/tugctl: %v\n%s", err, b)
	}
	return out
}

// creds are tugctl's flags for one user.
type creds []string

// certCreds are the flags for identity's certificate pair in pkiDir.
func certCreds(server, pkiDir, identity string) creds {
	return creds{"--server", server, "--ca-file", filepath.Join(pkiDir, "ca.crt"),
		"--cert-file", filepath.Join(pkiDir, identity+".crt"), "--key-file", filepath.Join(pkiDir, identity+".key")}
}

// tugctl runs the binary with creds and args (stdin: in) and returns
// its stdout, failing the test on error.
func tugctl(t testing.TB, as creds, in string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tugctlFor(t), append(append([]string{}, as...), args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "TUGBOAT_CONFIG=", "KUBECONFIG=")
	cmd.Stdin = strings.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("tugctl %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// consoleProc is a running `tugctl console`.
type consoleProc struct {
	URL   string
	Token string // printed for a non-loopback --listen without --token
	out   *cluster.Output
}

// startConsole runs `tugctl console` as the user of as, with args, until
// the test ends, and waits for the URL it prints.
func startConsole(t testing.TB, as creds, args ...string) *consoleProc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, tugctlFor(t), append(append(append([]string{}, as...), "console"), args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "TUGBOAT_CONFIG=", "KUBECONFIG=")
	p := &consoleProc{out: &cluster.Output{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("==== tugctl console output ====\n%s", p.out.String())
		}
	})
	urlRE := regexp.MustCompile(`Console: (http://\S+/)`)
	tokenRE := regexp.MustCompile(`the page asks for this token: (\S+)`)
	err := wait.Until(ctx, 2*time.Minute, func(context.Context) error {
		select {
		case <-exited:
			return wait.Stop(fmt.Errorf("tugctl console exited: %s", p.out.String()))
		default:
		}
		m := urlRE.FindStringSubmatch(p.out.String())
		if m == nil {
			return fmt.Errorf("no URL printed yet: %q", p.out.String())
		}
		p.URL = m[1]
		if m := tokenRE.FindStringSubmatch(p.out.String()); m != nil {
			p.Token = m[1]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
