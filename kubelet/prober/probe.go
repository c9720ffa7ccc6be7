package prober

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// maxOutput bounds what is kept of an exec probe's output or an HTTP
// probe's body for the failure message.
const maxOutput = 1024

// run executes probe once against the container and says whether it
// succeeded, and if not, why.
func run(ctx context.Context, ex Execer, pod *v1.Pod, podIP string, c *v1.Container, containerID string, p *v1.Probe, timeout time.Duration) (bool, string) {
	switch {
	case p.Exec != nil:
		return execProbe(ctx, ex, containerID, p.Exec.Command, timeout)
	case p.HttpGet != nil:
		return httpProbe(ctx, podIP, c, p.HttpGet, timeout)
	case p.TcpSocket != nil:
		return tcpProbe(ctx, podIP, c, p.TcpSocket, timeout)
	case p.Grpc != nil:
		return grpcProbe(ctx, podIP, p.Grpc, timeout)
	}
	return false, "probe has no handler (exec, httpGet, tcpSocket or grpc)"
}

func execProbe(ctx context.Context, ex Execer, containerID string, cmd []string, timeout time.Duration) (bool, string) {
	if ex == nil || len(cmd) == 0 {
		return false, "exec probe: no command"
	}
	out := LimitedBuffer{Max: maxOutput}
	code, err := ex.Exec(ctx, containerID, runtime.ExecRequest{Cmd: cmd, Stdout: &out, Stderr: &out})
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (err != nil && ctx.Err() != nil):
		return false, fmt.Sprintf("command %q timed out after %s", strings.Join(cmd, " "), timeout)
	case err != nil:
		return false, fmt.Sprintf("command %q: %v", strings.Join(cmd, " "), err)
	case code != 0:
		msg := fmt.Sprintf("command %q exited with %d", strings.Join(cmd, " "), code)
		if o := strings.TrimSpace(out.String()); o != "" {
			msg += ": " + o
		}
		return false, msg
	}
	return true, ""
}

// ResolvePort turns a port number or the name of a container port into a
// number, with Kubernetes' texts (probes and lifecycle hooks share it, as
// in Kubernetes).
func ResolvePort(c *v1.Container, port string) (int, error) {
	if n, err := strconv.Atoi(port); err == nil {
		if n < 1 || n > 65535 {
			return 0, fmt.Errorf("invalid port number: %d", n)
		}
		return n, nil
	}
	for _, p := range c.GetPorts() {
		if p.Name == port {
			return int(p.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("couldn't find port: %s in %s", port, c.Name)
}

// HTTPGet is the request of an httpGet action (a probe's or a lifecycle
// hook's): the host defaults to the pod's IP, the scheme to http, the
// path to "/"; a Host header sets the request's host. It also returns the
// URL, for messages.
func HTTPGet(ctx context.Context, podIP string, c *v1.Container, h *v1.HTTPGetAction, userAgent string) (*http.Request, string, error) {
	port, err := ResolvePort(c, h.Port)
	if err != nil {
		return nil, "", err
	}
	host := h.Host
	if host == "" {
		host = podIP
	}
	if host == "" {
		return nil, "", errors.New("the pod has no IP yet")
	}
	scheme := strings.ToLower(h.Scheme)
	if scheme == "" {
		scheme = "http"
	}
	path := h.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	target := u.String() + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, target, err
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "*/*")
	for _, hd := range h.HttpHeaders {
		if strings.EqualFold(hd.Name, "Host") {
			req.Host = hd.Value
			continue
		}
		req.Header.Add(hd.Name, hd.Value)
	}
	return req, target, nil
}

// HTTPClient is the client httpGet actions are sent with: no keep-alive,
// no proxy, certificates not verified, and redirects followed as
// Kubernetes' probes and hooks follow them (its RedirectChecker with
// followNonLocalRedirects false): to the same host, up to 10; a redirect
// to another host is not followed (its 3xx is the answer).
func HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // as Kubernetes: probes and hooks do not verify certificates
			Proxy:             nil,
		},
		CheckRedirect: sameHostRedirects,
	}
}

func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

func httpProbe(ctx context.Context, podIP string, c *v1.Container, h *v1.HTTPGetAction, timeout time.Duration) (bool, string) {
	req, target, err := HTTPGet(ctx, podIP, c, h, "tugboat-probe/1.0")
	if err != nil {
		if target == "" {
			return false, "HTTP probe: " + err.Error()
		}
		return false, fmt.Sprintf("HTTP probe %s: %v", target, err)
	}
	client := HTTPClient(timeout)
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, fmt.Sprintf("Get %q: timed out after %s", target, timeout)
		}
		return false, fmt.Sprintf("Get %q: %v", target, unwrapURLError(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return true, ""
	}
	msg := fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	if b := strings.TrimSpace(string(body)); b != "" {
		msg += ": " + b
	}
	return false, msg
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func tcpProbe(ctx context.Context, podIP string, c *v1.Container, t *v1.TCPSocketAction, timeout time.Duration) (bool, string) {
	port, err := ResolvePort(c, t.Port)
	if err != nil {
		return false, "TCP probe: " + err.Error()
	}
	host := t.Host
	if host == "" {
		host = podIP
	}
	if host == "" {
		return false, "TCP probe: the pod has no IP yet"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, fmt.Sprintf("dial tcp %s: %v", addr, unwrapOpError(err))
	}
	conn.Close()
	return true, ""
}

func unwrapOpError(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}

// LimitedBuffer keeps the first Max bytes written to it; it is safe for
// the concurrent writes of stdout and stderr.
type LimitedBuffer struct {
	Max int
	mu  sync.Mutex
	b   bytes.Buffer
}

func (l *LimitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.Max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *LimitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
