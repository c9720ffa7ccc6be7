package image

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// uploadChunk is the size of one ImageUpload data message.
const uploadChunk = 256 << 10

// runImageImport uploads the tarball to each node in turn (one after the
// other: the bytes all cross the apiserver, so parallel uploads would only
// share its bandwidth), reporting progress, and goes on past a node that
// fails; the exit status is 1 if any did.
func runImageImport(ctx context.Context, o *cli.Options, file string, named []string) error {
	format, err := archiveFormat(file)
	if err != nil {
		return err
	}
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	nodes, err := imageNodes(ctx, o, named)
	if err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	api := v1.NewNodeAPIClient(c.Conn())
	p := &importProgress{w: o.Out, tty: cli.IsTerminal(o.Out), total: st.Size()}
	if !p.tty {
		fmt.Fprintf(o.Out, "importing %s (%s, %s) on %d node(s)\n", file, format, humanBytes(st.Size()), len(nodes))
	}
	failed := false
	for _, n := range nodes {
		images, err := importOn(ctx, api, n, file, p)
		if err != nil {
			p.clear()
			fmt.Fprintf(o.ErrOut, "error: node %s: %v\n", n, err)
			failed = true
			if ctx.Err() != nil {
				break
			}
			continue
		}
		p.done(n, images)
	}
	if failed {
		return cli.ErrReported
	}
	return nil
}

// importOn streams file to node's ImportImage and returns the images the
// node imported. A gzip-compressed tarball is sent decompressed.
func importOn(ctx context.Context, api v1.NodeAPIClient, node, file string, p *importProgress) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	counted := &countingReader{r: f}
	r, err := tarStream(counted)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := api.ImportImage(ctx)
	if err != nil {
		return nil, apierrors.FromGRPC(err)
	}
	if err := stream.Send(&v1.ImageUpload{NodeName: node}); err != nil {
		return nil, recvErr(stream)
	}
	// Progress messages are read while sending so the node never waits on us.
	type result struct {
		images []string
		err    error
	}
	res := make(chan result, 1)
	go func() {
		for {
			m, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				res <- result{err: fmt.Errorf("the node ended the import without saying it was done")}
				return
			}
			if err != nil {
				res <- result{err: apierrors.FromGRPC(err)}
				cancel()
				return
			}
			if m.Done {
				res <- result{images: m.Images}
				return
			}
		}
	}()
	buf := make([]byte, uploadChunk)
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if err := stream.Send(&v1.ImageUpload{Data: append([]byte(nil), buf[:n]...)}); err != nil {
				break // the reason comes from Recv
			}
			p.update(node, counted.n.Load())
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			_ = stream.CloseSend()
			break
		}
		if rerr != nil {
			cancel()
			return nil, fmt.Errorf("reading %s: %w", file, rerr)
		}
	}
	out := <-res
	return out.images, out.err
}

// recvErr is the server's reason for a stream whose Send failed.
func recvErr(s v1.NodeAPI_ImportImageClient) error {
	for {
		if _, err := s.Recv(); err != nil {
			return apierrors.FromGRPC(err)
		}
	}
}

type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// tarStream is r itself, or r decompressed when it starts with gzip's magic.
func tarStream(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return gzip.NewReader(br)
	}
	return br, nil
}

// archiveFormat checks that file is a tarball the runtime can import and
// says which kind: "OCI layout" (oci-layout or index.json) or
// "docker-archive" (manifest.json, from docker save).
func archiveFormat(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	r, err := tarStream(f)
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	tr := tar.NewReader(r)
	docker := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: not a tar archive: %v", file, err)
		}
		switch path.Clean(strings.TrimPrefix(h.Name, "./")) {
		case "oci-layout", "index.json":
			return "OCI layout", nil
		case "manifest.json":
			docker = true
		}
	}
	if docker {
		return "docker-archive", nil
	}
	return "", fmt.Errorf("%s: neither an OCI image layout (no oci-layout or index.json) nor a docker-archive (no manifest.json): make one with docker save, podman save or skopeo copy", file)
}

// importProgress shows the upload: on a terminal, a bar per node redrawn
// in place; otherwise one line per node when it is done.
type importProgress struct {
	w     io.Writer
	tty   bool
	total int64
	last  time.Time
	drawn bool
}

// update redraws the bar (at most every 100ms).
func (p *importProgress) update(node string, sent int64) {
	if !p.tty || (time.Since(p.last) < 100*time.Millisecond && sent < p.total) {
		return
	}
	p.last = time.Now()
	p.drawn = true
	fmt.Fprintf(p.w, "\r\x1b[K%s", progressLine(node, sent, p.total, 30))
}

// clear removes a drawn bar, so a message can take its line.
func (p *importProgress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

func (p *importProgress) done(node string, images []string) {
	p.clear()
	fmt.Fprintf(p.w, "%s: imported %s (%s)\n", node, table.OrNone(strings.Join(images, ", ")), humanBytes(p.total))
}

// progressLine is "node1 [=======>      ]  45% 12.3MiB/27.3MiB".
func progressLine(node string, sent, total int64, width int) string {
	frac := 1.0
	if total > 0 {
		frac = min(1, float64(sent)/float64(total))
	}
	full := int(frac * float64(width))
	bar := strings.Repeat("=", full)
	if full < width {
		bar += ">" + strings.Repeat(" ", width-full-1)
	}
	return fmt.Sprintf("%s [%s] %3d%% %s/%s", node, bar, int(frac*100), humanBytes(sent), humanBytes(total))
}
