package troubleshoot

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

type logsFlags struct {
	container  string
	follow     bool
	previous   bool
	timestamps bool
	tail       int64
}

func newLogsCommand(o *cli.Options) *cobra.Command {
	f := &logsFlags{}
	cmd := &cobra.Command{
		Use:   "logs POD|pod/NAME|deploy/NAME|rs/NAME [-c CONTAINER] [-f] [--previous] [--timestamps] [--tail N]",
		Short: "Print the logs of a container in a pod",
		Long: `Print the logs of a container in a pod, read from its node through the
apiserver. For deploy/NAME and rs/NAME, one of their pods is picked (a
running, ready one first).`,
		Example: `  tugctl logs nginx
  tugctl logs deploy/web -c sidecar --tail 20 -f
  tugctl logs web-7c5ddbdf54-x2x9q --previous`,
		Args:              cli.ExactArgs(1, "POD"),
		ValidArgsFunction: o.CompletePods,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLogs(cmd.Context(), o, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.container, "container", "c", "", "container name (default: the pod's only container)")
	fl.BoolVarP(&f.follow, "follow", "f", false, "stream new lines as they are written")
	fl.BoolVarP(&f.previous, "previous", "p", false, "the log of the previous, terminated attempt of the container")
	fl.Int64Var(&f.tail, "tail", -1, "print the last N lines only (-1: all)")
	fl.BoolVar(&f.timestamps, "timestamps", false, "begin each line with the time the runtime read it (RFC3339Nano); needs a node on the CRI backend")
	return cmd
}

func runLogs(ctx context.Context, o *cli.Options, arg string, f *logsFlags) error {
	if f.tail == 0 || f.tail < -1 {
		return fmt.Errorf("--tail %d: want a positive number of lines, or -1 for all", f.tail)
	}
	ns, pod, err := podTarget(ctx, o, arg)
	if err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	req := &v1.LogsRequest{Namespace: ns, Pod: pod, Container: f.container, Follow: f.follow, Previous: f.previous, Timestamps: f.timestamps}
	if f.tail > 0 {
		req.TailLines = f.tail
	}
	stream, err := v1.NewNodeAPIClient(c.Conn()).Logs(ctx, req)
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted while following
			}
			return apierrors.FromGRPC(err)
		}
		if _, err := o.Out.Write(chunk.Data); err != nil {
			return err
		}
	}
}
