package troubleshoot

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/remote"
)

type logsFlags struct {
	container      string
	follow         bool
	previous       bool
	tail           int64
	since          time.Duration
	sinceTime      string
	timestamps     bool
	limitBytes     int64
	selector       string
	allContainers  bool
	prefix         bool
	maxLogRequests int
}

func newLogsCommand(o *cli.Options) *cobra.Command {
	f := &logsFlags{}
	cmd := &cobra.Command{
		Use:   "logs (POD|pod/NAME|deploy/NAME|rs/NAME | -l SELECTOR) [-c CONTAINER | --all-containers] [-f] [--previous] [--tail N] [--since 5m | --since-time T] [--timestamps] [--prefix]",
		Short: "Print the logs of a container in a pod",
		Long: `Print the logs of a container in a pod, read from its node through the
apiserver. For deploy/NAME and rs/NAME, one of their pods is picked (a
running, ready one first); -l prints the logs of every pod the selector
matches. --all-containers prints every container's, init containers
first. With several logs, --prefix starts each line with
[pod/NAME/CONTAINER]; following them (-f) reads them at once, at most
--max-log-requests.

--timestamps and --since/--since-time need a time per line, which nodes
on the CRI runtime backend keep; the native backend's raw logs refuse
them.`,
		Example: `  tugctl logs nginx
  tugctl logs deploy/web -c sidecar --tail 20 -f
  tugctl logs web-7c5ddbdf54-x2x9q --previous
  tugctl logs -l app=web --all-containers --prefix --since 10m`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: o.CompletePods,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("tail") && f.selector != "" {
				f.tail = 10 // kubectl's default with a selector
			}
			return runLogs(cmd.Context(), o, args, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.container, "container", "c", "", "container name (default: the pod's only container)")
	fl.BoolVarP(&f.follow, "follow", "f", false, "stream new lines as they are written")
	fl.BoolVarP(&f.previous, "previous", "p", false, "the log of the previous, terminated attempt of the container")
	fl.Int64Var(&f.tail, "tail", -1, "print the last N lines only (-1: all; 10 with -l)")
	fl.DurationVar(&f.since, "since", 0, "only lines newer than this, e.g. 30s, 5m, 2h")
	fl.StringVar(&f.sinceTime, "since-time", "", "only lines written after this RFC 3339 time")
	fl.BoolVar(&f.timestamps, "timestamps", false, "start each line with the time it was written (RFC 3339)")
	fl.Int64Var(&f.limitBytes, "limit-bytes", 0, "stop after this many bytes of each log (0: no limit)")
	fl.StringVarP(&f.selector, "selector", "l", "", "the logs of every pod with these labels")
	fl.BoolVar(&f.allContainers, "all-containers", false, "the logs of every container of the pods")
	fl.BoolVar(&f.prefix, "prefix", false, "start each line with [pod/NAME/CONTAINER]")
	fl.IntVar(&f.maxLogRequests, "max-log-requests", 5, "with -f: how many logs may be followed at once")
	return cmd
}

// logSource is one container's log to print.
type logSource struct {
	pod, container string
}

// request checks the flags and turns them into the request for one log.
func (f *logsFlags) request() (*v1.LogsRequest, error) {
	switch {
	case f.tail == 0 || f.tail < -1:
		return nil, fmt.Errorf("--tail %d: want a positive number of lines, or -1 for all", f.tail)
	case f.since < 0:
		return nil, fmt.Errorf("--since %s: must be positive", f.since)
	case f.since > 0 && f.sinceTime != "":
		return nil, fmt.Errorf("--since, --since-time: at most one of them")
	case f.limitBytes < 0:
		return nil, fmt.Errorf("--limit-bytes %d: must be positive", f.limitBytes)
	case f.maxLogRequests < 1:
		return nil, fmt.Errorf("--max-log-requests %d: must be positive", f.maxLogRequests)
	case f.allContainers && f.container != "":
		return nil, fmt.Errorf("--container %s, --all-containers: one or the other", f.container)
	}
	req := &v1.LogsRequest{Follow: f.follow, Previous: f.previous, Timestamps: f.timestamps, LimitBytes: f.limitBytes}
	if f.tail > 0 {
		req.TailLines = f.tail
	}
	if f.since > 0 {
		req.SinceSeconds = int64((f.since + time.Second - 1) / time.Second)
	}
	if f.sinceTime != "" {
		t, err := time.Parse(time.RFC3339, f.sinceTime)
		if err != nil {
			return nil, fmt.Errorf("--since-time %q: want an RFC 3339 time, e.g. 2024-05-01T10:00:00Z", f.sinceTime)
		}
		req.SinceTime = timestamppb.New(t)
	}
	return req, nil
}

func runLogs(ctx context.Context, o *cli.Options, args []string, f *logsFlags) error {
	base, err := f.request()
	if err != nil {
		return err
	}
	switch {
	case len(args) == 1 && f.selector != "":
		return fmt.Errorf("name a pod or use -l, not both")
	case len(args) == 0 && f.selector == "":
		return fmt.Errorf("name a pod: tugctl logs POD, TYPE/NAME or -l SELECTOR")
	}
	ns, err := o.Namespace()
	if err != nil {
		return err
	}
	var pods []string
	if f.selector != "" {
		if pods, err = selectedPods(ctx, o, ns, f.selector); err != nil {
			return err
		}
	} else {
		var name string
		if ns, name, err = podTarget(ctx, o, args[0]); err != nil {
			return err
		}
		pods = []string{name}
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	var sources []logSource
	for _, p := range pods {
		if !f.allContainers {
			sources = append(sources, logSource{pod: p, container: f.container})
			continue
		}
		pod, err := client.For[*v1.Pod](c).Get(ctx, ns, p)
		if err != nil {
			return err
		}
		for _, cs := range [][]*v1.Container{pod.GetSpec().GetInitContainers(), pod.GetSpec().GetContainers()} {
			for _, ctr := range cs {
				sources = append(sources, logSource{pod: p, container: ctr.Name})
			}
		}
	}
	if f.follow && len(sources) > f.maxLogRequests {
		return fmt.Errorf("you are attempting to follow %d log streams, but maximum allowed concurrency is %d, use --max-log-requests to increase the limit", len(sources), f.maxLogRequests)
	}
	out := &lineWriter{w: o.Out}
	read := func(s logSource) error {
		req := proto.CloneOf(base)
		req.Namespace, req.Pod, req.Container = ns, s.pod, s.container
		w := io.Writer(o.Out)
		if f.prefix {
			name := s.container
			if name == "" {
				name = defaultContainer(ctx, c, ns, s.pod)
			}
			w = &prefixWriter{out: out, prefix: []byte("[pod/" + s.pod + "/" + name + "] ")}
		} else if len(sources) > 1 && f.follow {
			w = &prefixWriter{out: out}
		}
		err := remote.CopyLog(ctx, c, req, w)
		if pw, ok := w.(*prefixWriter); ok {
			pw.flush()
		}
		return err
	}
	if !f.follow || len(sources) == 1 {
		for _, s := range sources {
			if err := read(s); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, len(sources))
	var wg sync.WaitGroup
	for i, s := range sources {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = read(s) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// selectedPods are the names of the pods of ns that the selector
// matches, sorted.
func selectedPods(ctx context.Context, o *cli.Options, ns, selector string) ([]string, error) {
	s, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("-l %q: %v", selector, err)
	}
	c, err := o.Client()
	if err != nil {
		return nil, err
	}
	pods, _, err := client.For[*v1.Pod](c).List(ctx, client.ListOptions{Namespace: ns, LabelSelector: s.String()})
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("no pods in namespace %s match %s", ns, selector)
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.GetMetadata().GetName())
	}
	sort.Strings(names)
	return names, nil
}

// defaultContainer is the container the kubelet picks when none is named
// (the pod's only one), for --prefix.
func defaultContainer(ctx context.Context, c *client.Client, ns, pod string) string {
	p, err := client.For[*v1.Pod](c).Get(ctx, ns, pod)
	if err != nil || len(p.GetSpec().GetContainers()) == 0 {
		return ""
	}
	return p.Spec.Containers[0].Name
}

// lineWriter writes whole lines of several logs to w, one at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) write(p []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(p)
	return err
}

// prefixWriter passes one log's text on line by line, each line started
// with prefix, so lines of logs read at once do not mix.
type prefixWriter struct {
	out    *lineWriter
	prefix []byte
	held   []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.held = append(p.held, b...)
	for {
		i := bytes.IndexByte(p.held, '\n')
		if i < 0 {
			return len(b), nil
		}
		if err := p.out.write(append(append([]byte(nil), p.prefix...), p.held[:i+1]...)); err != nil {
			return 0, err
		}
		p.held = p.held[i+1:]
	}
}

// flush writes a last line without its newline.
func (p *prefixWriter) flush() {
	if len(p.held) > 0 {
		_ = p.out.write(append(append([]byte(nil), p.prefix...), p.held...))
		p.held = nil
	}
}
