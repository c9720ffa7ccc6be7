package tugctl

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveSettingsContexts(t *testing.T) {
	dir := t.TempDir()
	ctxFile := writeFile(t, dir, "contexts.yaml", `clusters:
- {name: prod, server: prod:6443, caFile: prod/ca.crt}
- {name: dev, server: dev:6443}
users:
- {name: admin, certFile: prod/admin.crt, keyFile: /abs/admin.key}
- {name: ci, token: abc123.0123456789abcdef}
contexts:
- {name: prod, cluster: prod, user: admin, namespace: web}
- {name: dev, cluster: dev, user: ci}
- {name: broken, cluster: nowhere}
- {name: nouser, cluster: dev, user: ghost}
current-context: prod
`)
	flat := writeFile(t, dir, "flat.yaml", "server: flat:1\ncaFile: ca.crt\n")
	dangling := writeFile(t, dir, "dangling.yaml", "contexts:\n- {name: a}\ncurrent-context: gone\n")
	mixed := writeFile(t, dir, "mixed.yaml", "server: x:1\ncontexts:\n- {name: a}\n")
	dup := writeFile(t, dir, "dup.yaml", "clusters:\n- {name: a}\n- {name: a}\n")
	noName := writeFile(t, dir, "noname.yaml", "users:\n- {token: x}\n")
	tests := []struct {
		name    string
		flags   globalFlags
		server  string
		from    string
		ns, ca  string
		cert    string
		key     string
		token   string
		context string
		err     string
	}{
		{name: "current-context", flags: globalFlags{configPath: ctxFile}, server: "prod:6443", from: `context "prod" in ` + ctxFile, ns: "web",
			ca: filepath.Join(dir, "prod/ca.crt"), cert: filepath.Join(dir, "prod/admin.crt"), key: "/abs/admin.key", context: "prod"},
		{name: "--context", flags: globalFlags{configPath: ctxFile, context: "dev"}, server: "dev:6443", from: `context "dev" in ` + ctxFile, ns: "default",
			token: "abc123.0123456789abcdef", context: "dev"},
		{name: "flags beat the context", flags: globalFlags{configPath: ctxFile, context: "dev", server: "s:1", namespace: "n", tokenFile: "/t"}, server: "s:1", from: "--server", ns: "n", context: "dev"},
		{name: "flat form is context default", flags: globalFlags{configPath: flat, context: "default"}, server: "flat:1", from: flat, ns: "default", ca: filepath.Join(dir, "ca.crt"), context: "default"},
		{name: "flat form has no other context", flags: globalFlags{configPath: flat, context: "prod"}, err: `context "prod" not found: ` + flat + ` has no contexts, only the flat form (context "default")`},
		{name: "unknown --context", flags: globalFlags{configPath: ctxFile, context: "nope"}, err: `--context "nope": no such context in ` + ctxFile + ` (have: prod, dev, broken, nouser)`},
		{name: "unknown current-context", flags: globalFlags{configPath: dangling}, err: `current-context "gone": no such context in ` + dangling + ` (have: a)`},
		{name: "unknown cluster", flags: globalFlags{configPath: ctxFile, context: "broken"}, err: `context "broken": cluster "nowhere" is not in ` + ctxFile},
		{name: "unknown user", flags: globalFlags{configPath: ctxFile, context: "nouser"}, err: `context "nouser": user "ghost" is not in`},
		{name: "mixed forms", flags: globalFlags{configPath: mixed}, err: "use either these top-level keys or clusters/users/contexts, not both"},
		{name: "duplicate names", flags: globalFlags{configPath: dup}, err: `clusters[1].name: "a" appears twice`},
		{name: "missing name", flags: globalFlags{configPath: noName}, err: "users[0].name: required"},
		{name: "--context needs a file", flags: globalFlags{context: "x"}, err: "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := resolveSettings(tc.flags, func(k string) string {
				if k == "HOME" {
					return dir
				}
				return ""
			})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Server != tc.server || s.ServerFrom != tc.from || s.Namespace != tc.ns || s.CAFile != tc.ca || s.CertFile != tc.cert ||
				s.KeyFile != tc.key || s.Token != tc.token || s.Context != tc.context {
				t.Errorf("settings = %+v", s)
			}
		})
	}
}

// runConfig runs a tugctl command line with HOME at home and no server.
func runConfig(t *testing.T, home string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	o := &Options{Streams: Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, Getenv: func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}}
	code := o.Execute(context.Background(), args)
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
	o := &Options{Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }}
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
