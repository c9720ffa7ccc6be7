package troubleshoot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/remote"
)

type cpFlags struct {
	container  string
	noPreserve bool
}

func newCpCommand(o *cli.Options) *cobra.Command {
	f := &cpFlags{}
	cmd := &cobra.Command{
		Use:   "cp [NAMESPACE/]POD:PATH LOCAL | LOCAL [NAMESPACE/]POD:PATH [-c CONTAINER]",
		Short: "Copy files and directories to and from containers",
		Long: `Copy a file or a directory tree between this machine and a container, as
kubectl cp does: through exec, with tar in the container (the image must
have a tar on its PATH). From a pod, "tar cf - PATH" runs there and its
output is unpacked into LOCAL (a file is written to LOCAL, a directory's
content into LOCAL); entries that would land outside LOCAL and symlinks
are skipped with a warning. To a pod, LOCAL is packed here and
"tar -xmf - -C DIR" unpacks it there (into PATH itself when PATH is a
directory in the container).`,
		Example: `  tugctl cp web:/etc/nginx/nginx.conf ./nginx.conf
  tugctl cp ./site web:/usr/share/nginx/html -c nginx
  tugctl cp prod/api-0:/var/log/app ./app-logs`,
		Args:              cli.ExactArgs(2, "SRC DEST"),
		ValidArgsFunction: o.CompletePods,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCp(cmd.Context(), o, args[0], args[1], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.container, "container", "c", "", "container name (default: the pod's only container)")
	fl.BoolVar(&f.noPreserve, "no-preserve", false, "do not keep the files' owner and permissions in the container")
	return cmd
}

// remoteFile is a [NAMESPACE/]POD:PATH argument.
type remoteFile struct {
	namespace, pod, path string
}

// parseCpArg splits a cp argument: a remote one has a colon after a pod
// name (and an optional namespace); anything else is a local path.
func parseCpArg(arg string) (*remoteFile, error) {
	before, p, ok := strings.Cut(arg, ":")
	if !ok || before == "" || strings.Count(before, "/") > 1 || strings.HasPrefix(arg, "/") || strings.HasPrefix(arg, ".") {
		return nil, nil
	}
	if p == "" {
		return nil, fmt.Errorf("%q: filepath can not be empty", arg)
	}
	rf := &remoteFile{pod: before, path: p}
	if ns, pod, ok := strings.Cut(before, "/"); ok {
		if ns == "" || pod == "" {
			return nil, fmt.Errorf("%q: want [NAMESPACE/]POD:PATH", arg)
		}
		rf.namespace, rf.pod = ns, pod
	}
	return rf, nil
}

func runCp(ctx context.Context, o *cli.Options, src, dest string, f *cpFlags) error {
	from, err := parseCpArg(src)
	if err != nil {
		return err
	}
	to, err := parseCpArg(dest)
	if err != nil {
		return err
	}
	switch {
	case from != nil && to != nil:
		return fmt.Errorf("one of src or dest must be a local file specification")
	case from == nil && to == nil:
		return fmt.Errorf("one of src or dest must be a remote file specification")
	case from != nil:
		return copyFromPod(ctx, o, from, dest, f)
	}
	return copyToPod(ctx, o, src, to, f)
}

// inPod runs command in the container with stdin (nil: none) and stdout
// to out; a non-zero exit is an error with what it wrote to stderr.
func inPod(ctx context.Context, o *cli.Options, rf *remoteFile, container string, command []string, stdin io.Reader, out io.Writer) error {
	ns := rf.namespace
	if ns == "" {
		var err error
		if ns, err = o.Namespace(); err != nil {
			return err
		}
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := v1.NewNodeAPIClient(c.Conn()).Exec(ctx)
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	var stderr bytes.Buffer
	start := &v1.ExecStart{Namespace: ns, Pod: rf.pod, Container: container, Command: command, Stdin: stdin != nil}
	res, err := remote.Session{In: stdin, Out: out, ErrOut: &stderr, TerminalFd: -1}.Run(ctx, s, start)
	switch {
	case err != nil:
		return err
	case !res.Exited:
		return fmt.Errorf("%s in pod %s: the stream ended without the command's exit status", command[0], rf.pod)
	case res.ExitCode != 0:
		return fmt.Errorf("%s in pod %s: command terminated with exit code %d: %s", strings.Join(command, " "), rf.pod, res.ExitCode, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// copyFromPod runs tar cf in the container and unpacks its output into
// dest.
func copyFromPod(ctx context.Context, o *cli.Options, rf *remoteFile, dest string, f *cpFlags) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := untar(pr, dest, tarPrefix(rf.path), o.ErrOut)
		_, _ = io.Copy(io.Discard, pr) // let tar finish if untar stopped early
		done <- err
	}()
	err := inPod(ctx, o, rf, f.container, []string{"tar", "cf", "-", rf.path}, nil, pw)
	pw.CloseWithError(err)
	uerr := <-done
	if err != nil {
		return err
	}
	return uerr
}

// tarPrefix is the name tar gives the source in its archive: the path
// without leading slashes, cleaned.
func tarPrefix(p string) string {
	return path.Clean(strings.TrimLeft(p, "/"))
}

// copyToPod packs src and unpacks it in the container: into the
// destination's directory under the destination's base name, or into the
// destination when it is a directory there.
func copyToPod(ctx context.Context, o *cli.Options, src string, rf *remoteFile, f *cpFlags) error {
	srcInfo, err := statLocal(src)
	if err != nil {
		return err
	}
	destPath := rf.path
	if isDirInPod(ctx, o, rf, f.container) {
		destPath = path.Join(destPath, baseName(src))
	}
	dir, base := path.Dir(destPath), path.Base(destPath)
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarLocal(pw, src, srcInfo, base)) }()
	command := []string{"tar", "-xmf", "-"}
	if f.noPreserve {
		command = []string{"tar", "--no-same-permissions", "--no-same-owner", "-xmf", "-"}
	}
	if dir != "" && dir != "." {
		command = append(command, "-C", dir)
	}
	err = inPod(ctx, o, rf, f.container, command, pr, io.Discard)
	pr.CloseWithError(errors.Join(err, io.ErrClosedPipe))
	return err
}

// isDirInPod reports whether the destination is a directory in the
// container ("test -d", as kubectl asks).
func isDirInPod(ctx context.Context, o *cli.Options, rf *remoteFile, container string) bool {
	return inPod(ctx, o, rf, container, []string{"test", "-d", rf.path}, nil, io.Discard) == nil
}
