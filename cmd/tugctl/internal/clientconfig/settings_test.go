package clientconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveSettings(t *testing.T) {
	home := t.TempDir()
	writeFile(t, home, "config", "")
	cfgDir := filepath.Join(home, ".tugboat")
	if err := mkdir(cfgDir); err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfgDir, "config", "server: file:1\nnamespace: team\ncaFile: ca.crt\n")
	other := writeFile(t, home, "other.yaml", "server: other:1\n")
	tests := []struct {
		name          string
		flags         Flags
		env           map[string]string
		server, from  string
		namespace, ca string
		err           string
	}{
		{name: "config file", env: map[string]string{"HOME": home}, server: "file:1", from: filepath.Join(cfgDir, "config"), namespace: "team", ca: filepath.Join(cfgDir, "ca.crt")},
		{name: "env beats file", env: map[string]string{"HOME": home, "TUGBOAT_SERVER": "env:1"}, server: "env:1", from: "TUGBOAT_SERVER", namespace: "team", ca: filepath.Join(cfgDir, "ca.crt")},
		{name: "flag beats env", flags: Flags{Server: "flag:1", Namespace: "mine", CAFile: "/x/ca"}, env: map[string]string{"HOME": home, "TUGBOAT_SERVER": "env:1"}, server: "flag:1", from: "--server", namespace: "mine", ca: "/x/ca"},
		{name: "no file: defaults", env: map[string]string{"HOME": t.TempDir()}, server: DefaultServer, from: "default", namespace: "default"},
		{name: "TUGBOAT_CONFIG", env: map[string]string{"HOME": home, "TUGBOAT_CONFIG": other}, server: "other:1", from: other, namespace: "default"},
		{name: "--config", flags: Flags{ConfigPath: other}, env: map[string]string{"HOME": home}, server: "other:1", from: other, namespace: "default"},
		{name: "a named config file must exist", flags: Flags{ConfigPath: filepath.Join(home, "nope")}, env: map[string]string{"HOME": home}, err: "no such file"},
		{name: "unknown field in the config file", flags: Flags{ConfigPath: writeFile(t, home, "bad.yaml", "sever: x\n")}, env: map[string]string{"HOME": home}, err: `bad.yaml: error unmarshaling JSON: while decoding JSON: json: unknown field "sever"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Resolve(tc.flags, func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Server != tc.server || s.ServerFrom != tc.from || s.Namespace != tc.namespace || s.CAFile != tc.ca {
				t.Errorf("settings = %+v", s)
			}
		})
	}
}

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
		flags   Flags
		server  string
		from    string
		ns, ca  string
		cert    string
		key     string
		token   string
		context string
		err     string
	}{
		{name: "current-context", flags: Flags{ConfigPath: ctxFile}, server: "prod:6443", from: `context "prod" in ` + ctxFile, ns: "web",
			ca: filepath.Join(dir, "prod/ca.crt"), cert: filepath.Join(dir, "prod/admin.crt"), key: "/abs/admin.key", context: "prod"},
		{name: "--context", flags: Flags{ConfigPath: ctxFile, Context: "dev"}, server: "dev:6443", from: `context "dev" in ` + ctxFile, ns: "default",
			token: "abc123.0123456789abcdef", context: "dev"},
		{name: "flags beat the context", flags: Flags{ConfigPath: ctxFile, Context: "dev", Server: "s:1", Namespace: "n", TokenFile: "/t"}, server: "s:1", from: "--server", ns: "n", context: "dev"},
		{name: "flat form is context default", flags: Flags{ConfigPath: flat, Context: "default"}, server: "flat:1", from: flat, ns: "default", ca: filepath.Join(dir, "ca.crt"), context: "default"},
		{name: "flat form has no other context", flags: Flags{ConfigPath: flat, Context: "prod"}, err: `context "prod" not found: ` + flat + ` has no contexts, only the flat form (context "default")`},
		{name: "unknown --context", flags: Flags{ConfigPath: ctxFile, Context: "nope"}, err: `--context "nope": no such context in ` + ctxFile + ` (have: prod, dev, broken, nouser)`},
		{name: "unknown current-context", flags: Flags{ConfigPath: dangling}, err: `current-context "gone": no such context in ` + dangling + ` (have: a)`},
		{name: "unknown cluster", flags: Flags{ConfigPath: ctxFile, Context: "broken"}, err: `context "broken": cluster "nowhere" is not in ` + ctxFile},
		{name: "unknown user", flags: Flags{ConfigPath: ctxFile, Context: "nouser"}, err: `context "nouser": user "ghost" is not in`},
		{name: "mixed forms", flags: Flags{ConfigPath: mixed}, err: "use either these top-level keys or clusters/users/contexts, not both"},
		{name: "duplicate names", flags: Flags{ConfigPath: dup}, err: `clusters[1].name: "a" appears twice`},
		{name: "missing name", flags: Flags{ConfigPath: noName}, err: "users[0].name: required"},
		{name: "--context needs a file", flags: Flags{Context: "x"}, err: "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Resolve(tc.flags, func(k string) string {
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

// writeFile writes a file under dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mkdir(p string) error { return os.MkdirAll(p, 0o755) }
