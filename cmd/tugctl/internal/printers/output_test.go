package printers

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// golden is testdata/kubectl: pod.yaml, and what kubectl printed for it
// with each template (record.sh records them with /usr/bin/kubectl).
const golden = "testdata/kubectl"

func goldenPod(t *testing.T) v1.Object {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(golden, "pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Decode("pod.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	return objs[0].Object
}

func printed(t *testing.T, spec string, objs []v1.Object, single bool) string {
	t.Helper()
	o, err := ParseOutput(spec)
	if err != nil {
		t.Fatalf("-o %s: %v", spec, err)
	}
	var b strings.Builder
	if err := o.Print(&b, objs, single); err != nil {
		t.Fatalf("-o %s: %v", spec, err)
	}
	return b.String()
}

func readGolden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(golden, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJSONPathLikeKubectl prints pod.yaml with every template of
// templates.txt and compares with kubectl's output for the same object.
func TestJSONPathLikeKubectl(t *testing.T) {
	pod := goldenPod(t)
	f, err := os.Open(filepath.Join(golden, "templates.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		name, tpl, _ := strings.Cut(sc.Text(), "\t")
		want := readGolden(t, "jsonpath-"+name+".out")
		if got := printed(t, "jsonpath="+tpl, []v1.Object{pod}, true); got != want {
			t.Errorf("jsonpath %s %s:\n got %q\nwant %q (kubectl)", name, tpl, got, want)
		}
		n++
	}
	if n < 10 {
		t.Fatalf("only %d templates", n)
	}
	if got, want := printed(t, "jsonpath-file="+filepath.Join(golden, "templates-file.txt"), []v1.Object{pod}, true), readGolden(t, "jsonpath-file.out"); got != want {
		t.Errorf("jsonpath-file: %q, want %q", got, want)
	}
	tpl := `{{.metadata.name}}{{range .spec.containers}} {{.name}}={{.image}}{{end}}{{"\n"}}{{index .metadata.labels "app"}}{{"\n"}}`
	if got, want := printed(t, "go-template="+tpl, []v1.Object{pod}, true), readGolden(t, "go-template.out"); got != want {
		t.Errorf("go-template: %q, want %q", got, want)
	}
}

func TestTemplatesOverLists(t *testing.T) {
	pod := goldenPod(t)
	other := proto.Clone(pod).(*v1.Pod)
	other.Metadata.Name = "web-2"
	other.Spec.NodeName = ""
	objs := []v1.Object{pod, other}
	// Several objects are a List, as kubectl gives them to the template.
	if got := printed(t, `jsonpath={range .items[*]}{.metadata.name}{" "}{end}`, objs, false); got != "web-1 web-2 " {
		t.Errorf("jsonpath over a list: %q", got)
	}
	if got := printed(t, `jsonpath={.kind}`, objs, false); got != "List" {
		t.Errorf("jsonpath .kind of a list: %q", got)
	}
	if got := printed(t, `go-template={{range .items}}{{.metadata.name}}:{{.spec.nodeName}} {{end}}`, objs, false); got != "web-1:node2 web-2:<no value> " {
		t.Errorf("go-template over a list: %q", got)
	}
	// custom-columns: kubectl's tabwriter (cells at least 6 wide, 3 apart),
	// every result comma separated, <none> for nothing.
	want := "NAME    IMAGES                    PORT   NODE\n" +
		"web-1   nginx:1.25,busybox:1.36   80     node2\n" +
		"web-2   nginx:1.25,busybox:1.36   80     <none>\n"
	if got := printed(t, "custom-columns=NAME:.metadata.name,IMAGES:.spec.containers[*].image,PORT:{.spec.containers[0].ports[0].containerPort},NODE:spec.nodeName", objs, false); got != want {
		t.Errorf("custom-columns:\n%s\nwant\n%s", got, want)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "cols")
	os.WriteFile(file, []byte("NAME NODE\n.metadata.name .spec.nodeName\n"), 0o644)
	if got := printed(t, "custom-columns-file="+file, objs, false); got != "NAME    NODE\nweb-1   node2\nweb-2   <none>\n" {
		t.Errorf("custom-columns-file: %q", got)
	}
	o, _ := ParseOutput("custom-columns=N:.metadata.name")
	o.NoHeaders = true
	var b strings.Builder
	o.Print(&b, objs, false)
	if b.String() != "web-1\nweb-2\n" {
		t.Errorf("custom-columns --no-headers: %q", b.String())
	}
}

func TestOutputErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"jsonpath={.metadata.name":     "error parsing jsonpath {.metadata.name, unclosed action",
		"go-template={{.metadata.name": "error parsing template {{.metadata.name, template: output:1: unclosed action",
		"jsonpath=":                    "template format specified but no template given",
		"custom-columns=NAME":          "unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>",
		"custom-columns=A:{{x}":        "unexpected path string",
		"jsonpath-file=/no/such/file":  "no such file or directory",
		"yml":                          `--output "yml": want one of wide, yaml, json`,
		"yaml=x":                       `--output "yaml=x"`,
	} {
		_, err := ParseOutput(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseOutput(%q): %v, want %q", spec, err, want)
		}
	}
}

func TestSortBy(t *testing.T) {
	mk := func(name string, restarts int32, ip string) v1.Object {
		return &v1.Pod{Metadata: &v1.ObjectMeta{Name: name}, Status: &v1.PodStatus{PodIp: ip,
			ContainerStatuses: []*v1.ContainerStatus{{Name: "c", RestartCount: restarts}}}}
	}
	objs := []v1.Object{mk("web-10", 3, "10.0.0.9"), mk("web-2", 12, ""), mk("web-1", 0, "10.0.0.10")}
	names := func() string {
		var s []string
		for _, o := range objs {
			s = append(s, o.GetMetadata().GetName())
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct{ path, want string }{
		{".metadata.name", "web-1 web-10 web-2"},                              // byte order, as kubectl
		{"{.status.containerStatuses[0].restartCount}", "web-1 web-10 web-2"}, // numbers by value
		{"status.podIP", "web-2 web-1 web-10"},                                // missing first; "10" < "9"
	} {
		if err := SortBy(objs, tc.path); err != nil {
			t.Fatal(err)
		}
		if got := names(); got != tc.want {
			t.Errorf("--sort-by %s: %s, want %s", tc.path, got, tc.want)
		}
	}
	if err := SortBy(objs, ".spec.nodeName"); err == nil || !strings.Contains(err.Error(), `couldn't find any field with path "{.spec.nodeName}"`) {
		t.Errorf("--sort-by a field no object has: %v", err)
	}
	if err := SortBy(objs, "{{.metadata.name}}"); err == nil || !strings.Contains(err.Error(), "unexpected path string") {
		t.Errorf("--sort-by a bad path: %v", err)
	}
}
