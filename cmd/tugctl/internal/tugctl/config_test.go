package tugctl

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

func TestVersionClientOnly(t *testing.T) {
	var out, errOut bytes.Buffer
	o := &cli.Options{Streams: cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, Version: "v1.2.3", Getenv: func(string) string { return "" }}
	if code := Execute(context.Background(), o, []string{"version", "--client"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "Client Version: v1.2.3 (") {
		t.Errorf("version printed %q", out.String())
	}
}

func TestUnknownCommandAndFlag(t *testing.T) {
	for _, args := range [][]string{{"frobnicate"}, {"get", "pods", "--frob"}} {
		var out, errOut bytes.Buffer
		o := &cli.Options{Streams: cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, Getenv: func(string) string { return "" }}
		if code := Execute(context.Background(), o, args); code == 0 || !strings.HasPrefix(errOut.String(), "error: unknown") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut.String())
		}
	}
}

func mkdir(p string) error { return os.MkdirAll(p, 0o755) }
