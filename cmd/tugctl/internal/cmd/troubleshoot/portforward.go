package troubleshoot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

type portForwardFlags struct {
	addresses []string
}

func newPortForwardCommand(o *cli.Options) *cobra.Command {
	f := &portForwardFlags{}
	cmd := &cobra.Command{
		Use:   "port-forward POD|pod/NAME|svc/NAME|deploy/NAME|rs/NAME [LOCAL_PORT:]REMOTE_PORT...",
		Short: "Forward local ports to a pod",
		Long: `Listen on local ports and forward each connection to a port of a pod,
through the apiserver and the pod's kubelet, which connects to the port on
the pod's localhost inside its network namespace (so a server listening on
127.0.0.1 in the pod is reached too).

REMOTE_PORT is a number or a container port's name; LOCAL_PORT defaults to
the same number, and 0 (":REMOTE_PORT") picks a free one. For svc/NAME the
ports are the Service's (by number or name), forwarded to their targetPort
on one of its ready pods; deploy/NAME and rs/NAME pick one of their pods.
Runs until interrupted.`,
		Example: `  tugctl port-forward pod/web 8080:80
  tugctl port-forward svc/web 8080:http
  tugctl port-forward deploy/web :80 --address 0.0.0.0`,
		ValidArgsFunction: o.CompletePods,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return fmt.Errorf("port-forward: want TARGET [LOCAL_PORT:]REMOTE_PORT..., e.g. tugctl port-forward pod/web 8080:80")
			}
			return runPortForward(cmd.Context(), o, args[0], args[1:], f)
		},
	}
	cmd.Flags().StringSliceVar(&f.addresses, "address", []string{"localhost"}, "local addresses to listen on, comma separated (localhost is 127.0.0.1 and ::1)")
	return cmd
}

// portSpec is one LOCAL:REMOTE argument; remote may be a port name until
// it is resolved against the target.
type portSpec struct {
	local  int
	remote string
	port   int32 // the pod's port, once resolved
}

func parsePorts(args []string) ([]portSpec, error) {
	var out []portSpec
	for _, a := range args {
		local, remote, ok := strings.Cut(a, ":")
		if !ok {
			remote, local = a, a
		}
		if remote == "" {
			return nil, fmt.Errorf("port %q: the remote port is missing", a)
		}
		p := portSpec{remote: remote}
		if local == "" {
			local = "0"
		}
		n, err := strconv.Atoi(local)
		if err != nil || n < 0 || n > 65535 {
			if !ok {
				// "http": a name alone needs a local port.
				return nil, fmt.Errorf("port %q: a named port needs a local port: LOCAL:%s", a, a)
			}
			return nil, fmt.Errorf("port %q: local port %q is not a port number (0-65535)", a, local)
		}
		p.local = n
		if r, err := strconv.Atoi(remote); err == nil && (r < 1 || r > 65535) {
			return nil, fmt.Errorf("port %q: remote port %d is not a port number (1-65535)", a, r)
		}
		out = append(out, p)
	}
	return out, nil
}

func runPortForward(ctx context.Context, o *cli.Options, target string, portArgs []string, f *portForwardFlags) error {
	ports, err := parsePorts(portArgs)
	if err != nil {
		return err
	}
	ns, pod, err := forwardTarget(ctx, o, target, ports)
	if err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	p, err := client.For[*v1.Pod](c).Get(ctx, ns, pod)
	if err != nil {
		return err
	}
	if ph := p.GetStatus().GetPhase(); ph != "Running" {
		return fmt.Errorf("unable to forward port because pod is not running. Current status=%s", ph)
	}
	for i := range ports {
		if ports[i].port == 0 {
			if ports[i].port, err = containerPort(p, ports[i].remote); err != nil {
				return err
			}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	api := v1.NewNodeAPIClient(c.Conn())
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	var outMu sync.Mutex
	say := func(w io.Writer, format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(w, format, args...)
	}
	for i := range ports {
		p := &ports[i]
		ls, err := listen(f.addresses, p.local)
		if err != nil {
			return err
		}
		for _, l := range ls {
			listeners = append(listeners, l)
			addr := l.Addr().(*net.TCPAddr)
			p.local = addr.Port // the same on every address: the first picks a free one
			say(o.Out, "Forwarding from %s -> %d\n", addr.String(), p.port)
		}
	}
	var wg sync.WaitGroup
	for _, l := range listeners {
		port := portOf(ports, l)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				say(o.Out, "Handling connection for %d\n", l.Addr().(*net.TCPAddr).Port)
				go func() {
					defer conn.Close()
					if err := forwardConn(ctx, api, ns, pod, port, conn.(*net.TCPConn)); err != nil && ctx.Err() == nil {
						say(o.ErrOut, "error: an error occurred forwarding %d -> %d: %v\n", l.Addr().(*net.TCPAddr).Port, port, err)
					}
				}()
			}
		}()
	}
	<-ctx.Done()
	for _, l := range listeners {
		l.Close()
	}
	wg.Wait()
	return nil
}

func portOf(ports []portSpec, l net.Listener) int32 {
	lp := l.Addr().(*net.TCPAddr).Port
	for _, p := range ports {
		if p.local == lp {
			return p.port
		}
	}
	return 0
}

// listen opens port on each address; "localhost" is 127.0.0.1 and ::1 (one
// of the two may be missing on the host, not both). Port 0 picks a free
// port, then the same on the other addresses.
func listen(addrs []string, port int) ([]net.Listener, error) {
	var out []net.Listener
	var errs []error
	for _, a := range addrs {
		hosts := []string{a}
		if a == "localhost" {
			hosts = []string{"127.0.0.1", "::1"}
		}
		for _, h := range hosts {
			l, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(port)))
			if err != nil {
				errs = append(errs, err)
				if a != "localhost" {
					for _, l := range out {
						l.Close()
					}
					return nil, fmt.Errorf("unable to listen on %s: %v", net.JoinHostPort(h, strconv.Itoa(port)), err)
				}
				continue
			}
			out = append(out, l)
			port = l.Addr().(*net.TCPAddr).Port
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("unable to listen on any of the requested ports: %v", errors.Join(errs...))
	}
	return out, nil
}

// forwardTarget resolves the target to a pod; for a Service it also
// translates the ports to the pods' target ports.
func forwardTarget(ctx context.Context, o *cli.Options, target string, ports []portSpec) (string, string, error) {
	kind, name, ok := strings.Cut(target, "/")
	if !ok || (!strings.EqualFold(kind, "svc") && !strings.EqualFold(kind, "service") && !strings.EqualFold(kind, "services")) {
		return podTarget(ctx, o, target)
	}
	ns, err := o.Namespace()
	if err != nil {
		return "", "", err
	}
	c, err := o.Client()
	if err != nil {
		return "", "", err
	}
	svc, err := client.For[*v1.Service](c).Get(ctx, ns, name)
	if err != nil {
		return "", "", err
	}
	if len(svc.GetSpec().GetSelector()) == 0 {
		return "", "", fmt.Errorf("service %s has no selector: there is no pod to forward to", name)
	}
	sel := labels.SelectorFromSet(svc.GetSpec().GetSelector())
	pod, err := pickPod(ctx, o, ns, target, sel)
	if err != nil {
		return "", "", err
	}
	for i := range ports {
		sp, err := servicePort(svc, ports[i].remote)
		if err != nil {
			return "", "", err
		}
		tp := sp.GetTargetPort()
		if tp == "" {
			tp = strconv.Itoa(int(sp.Port))
		}
		if n, err := strconv.Atoi(tp); err == nil {
			ports[i].port = int32(n)
		} else {
			ports[i].remote = tp // a container port's name, resolved on the pod
		}
	}
	return ns, pod, nil
}

func servicePort(svc *v1.Service, p string) (*v1.ServicePort, error) {
	var have []string
	for _, sp := range svc.GetSpec().GetPorts() {
		if sp.Name == p || strconv.Itoa(int(sp.Port)) == p {
			return sp, nil
		}
		have = append(have, strconv.Itoa(int(sp.Port)))
	}
	return nil, fmt.Errorf("service %s does not have a service port %s (its ports: %s)", svc.GetMetadata().GetName(), p, strings.Join(have, ", "))
}

// containerPort resolves a port number or a container port's name on pod.
func containerPort(pod *v1.Pod, p string) (int32, error) {
	if n, err := strconv.Atoi(p); err == nil {
		return int32(n), nil
	}
	for _, c := range pod.GetSpec().GetContainers() {
		for _, cp := range c.GetPorts() {
			if cp.Name == p {
				return cp.ContainerPort, nil
			}
		}
	}
	return 0, fmt.Errorf("pod %s does not have a named port %q", pod.GetMetadata().GetName(), p)
}

// forwardConn carries one local connection over one PortForward stream,
// passing half-closes on both ways.
func forwardConn(ctx context.Context, api v1.NodeAPIClient, ns, pod string, port int32, conn *net.TCPConn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := api.PortForward(ctx)
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	if err := st.Send(&v1.PortForwardFrame{Start: &v1.PortForwardStart{Namespace: ns, Pod: pod, Port: port}}); err != nil {
		return apierrors.FromGRPC(err)
	}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := conn.Read(buf)
			if n > 0 {
				if st.Send(&v1.PortForwardFrame{Data: append([]byte(nil), buf[:n]...)}) != nil {
					return
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					_ = st.Send(&v1.PortForwardFrame{CloseWrite: true})
					_ = st.CloseSend()
				} else {
					cancel()
				}
				return
			}
		}
	}()
	for {
		fr, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return apierrors.FromGRPC(err)
		}
		if len(fr.Data) > 0 {
			if _, err := conn.Write(fr.Data); err != nil {
				return err
			}
		}
		if fr.CloseWrite {
			_ = conn.CloseWrite()
		}
	}
}
