package tugctl

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// runConfig runs a tugctl command line with HOME at home and no server.
func runConfig(t *testing.T, home string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	o := &cli.Options{Streams: cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, Getenv: func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}}
	code := Execute(context.Background(), o, args)
	return result{out.String(), errOut.String(), code}
}

func TestConfigCommands(t *testing.T) {
	home := t.TempDir()
	cfgDir := filepath.Join(home, ".tugboat")
	cfgPath := filepath.Join(cfgDir, "config")
	if r := runConfig(t, home, "config", "current-context"); r.code != 1 || !strings.Contains(r.err, "current-context is not set in "+cfgPath) {
		t.Errorf("current-context without a file: %v", r)
	}
	if err := mkdir(cfgDir); err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfgDir, "config", "server: a:1\nnamespace: team\ncaFile: ca.crt\n")
	if r := mustOK(t, runConfig(t, home, "config", "current-context")); r.out != "default\n" {
		t.Errorf("flat current-context: %v", r)
	}
	if r := mustOK(t, runConfig(t, home, "config", "view")); r.out != "caFile: ca.crt\nnamespace: team\nserver: a:1\n" {
		t.Errorf("flat view: %q", r.out)
	}
	// The first edit turns the flat form into the context "default".
	if r := mustOK(t, runConfig(t, home, "config", "set-cluster", "prod", "--server", "p:1", "--ca-file", filepath.Join(cfgDir, "prod", "ca.crt"))); r.out != "Cluster \"prod\" set.\n" {
		t.Errorf("set-cluster: %v", r)
	}
	mustOK(t, runConfig(t, home, "config", "set-credentials", "admin", "--cert-file", "/abs/admin.crt", "--key-file", "/abs/admin.key"))
	if r := mustOK(t, runConfig(t, home, "config", "set-context", "prod", "--cluster", "prod", "--user", "admin", "-n", "web")); r.out != "Context \"prod\" created.\n" {
		t.Errorf("set-context: %v", r)
	}
	if r := mustOK(t, runConfig(t, home, "config", "use-context", "prod")); r.out != "Switched to context \"prod\".\n" {
		t.Errorf("use-context: %v", r)
	}
	mustOK(t, runConfig(t, home, "config", "set-credentials", "bot", "--token", "abc123.0123456789abcdef"))
	if r := mustOK(t, runConfig(t, home, "config", "set-context", "--current", "--namespace", "web2")); r.out != "Context \"prod\" modified.\n" {
		t.Errorf("set-context --current: %v", r)
	}
	want := `clusters:
- caFile: ca.crt
  name: default
  server: a:1
- caFile: prod/ca.crt
  name: prod
  server: p:1
contexts:
- cluster: default
  name: default
  namespace: team
  user: default
- cluster: prod
  name: prod
  namespace: web2
  user: admin
current-context: prod
users:
- name: default
- certFile: /abs/admin.crt
  keyFile: /abs/admin.key
  name: admin
- name: bot
  token: REDACTED
`
	if r := mustOK(t, runConfig(t, home, "config", "view")); r.out != want {
		t.Errorf("view:\n%s\nwant\n%s", r.out, want)
	}
	if r := mustOK(t, runConfig(t, home, "config", "view", "--raw")); !strings.Contains(r.out, "token: abc123.0123456789abcdef") {
		t.Errorf("view --raw:\n%s", r.out)
	}
	if st, err := os.Stat(cfgPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("config file mode: %v %v", st.Mode(), err)
	}
	r := mustOK(t, runConfig(t, home, "config", "get-contexts"))
	if got := row(t, r.out, "*"); strings.Join(got, " ") != "* prod prod admin web2" {
		t.Errorf("get-contexts:\n%s", r.out)
	}
	// The edited file resolves: paths relative to it, the current context's namespace.
	o := &cli.Options{Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }}
	s, err := o.Settings()
	if err != nil {
		t.Fatal(err)
	}
	if s.Server != "p:1" || s.CAFile != filepath.Join(cfgDir, "prod", "ca.crt") || s.Namespace != "web2" || s.CertFile != "/abs/admin.crt" {
		t.Errorf("settings after edits: %+v", s)
	}
	mustFail(t, runConfig(t, home, "config", "use-context", "nope"), `context "nope": no such context in `+cfgPath+` (have: default, prod)`)
	mustFail(t, runConfig(t, home, "config", "set-context"), "name one context, or use --current")
	mustFail(t, runConfig(t, home, "config", "set-credentials", "bot", "--token-file", "/t"), `user "bot" would have both`)
	mustFail(t, runConfig(t, home, "config", "use-context"), "want NAME")
}
